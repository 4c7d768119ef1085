package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plantstore/plantstore/client"
)

// webhooksVerbs are the verbs of `plantstore webhooks`, in the usage's
// order: the endpoints', then their record's.
var webhooksVerbs = []string{"list", "create", "rotate", "delete", "attempts", "message", "redeliver"}

const webhooksUsage = "usage: plantstore webhooks list|create|rotate|delete|attempts|message|redeliver [flags]"

// A secret never reaches the terminal: create and rotate write it to the
// file --secret-file names (made with mode 0600, never overwritten), and
// print the endpoint without it.
var webhooksSynopses = map[string]string{
	"list": "plantstore webhooks list [flags]\n\nPrints every webhook endpoint (the webhooks file's too, read-only), without secrets.",
	"create": "plantstore webhooks create --endpoint-url URL --secret-file PATH [--description TEXT] [--format origin|envelope] [--events E,...] [flags]\n\n" +
		"Makes a webhook endpoint and writes its signing secret to PATH, a new file\n" +
		"(mode 0600) that the receiver reads; the secret is never printed.",
	"rotate": "plantstore webhooks rotate ID --secret-file PATH [--overlap 24h] [flags]\n\n" +
		"Gives the endpoint a new signing secret, written to PATH (a new file, mode\n" +
		"0600); the current secrets keep signing for --overlap, then are dropped.",
	"delete": "plantstore webhooks delete ID [flags]\n\nRemoves a webhook endpoint made through the API.",
	"attempts": "plantstore webhooks attempts ENDPOINT [--status succeeded|failed] [--limit N [--after ID]] [flags]\n\n" +
		"Prints the endpoint's attempts on record, newest first: when, the status code\n" +
		"(or why there was no answer), the latency and the answer's first bytes. With\n" +
		"--limit (or --after) it prints one page, those older than attempt ID; while\n" +
		"more remain, stderr says the command for the next page.",
	"message": "plantstore webhooks message WEBHOOK-ID [flags]\n\n" +
		"Prints a message (one event for one endpoint): its state and its attempts.",
	"redeliver": "plantstore webhooks redeliver WEBHOOK-ID [flags]\n\n" +
		"Sends a message again now, whatever its state (a dead letter included), with\n" +
		"its webhook-id and bytes, and prints it as queued; `webhooks message` shows\n" +
		"the attempt that follows.",
}

// webhooksSummaries are each verb's line in `plantstore webhooks --help`.
var webhooksSummaries = map[string]string{
	"list":      "Prints every webhook endpoint, without secrets.",
	"create":    "Makes a webhook endpoint; its secret goes to --secret-file.",
	"rotate":    "Gives an endpoint a new secret (to --secret-file); the old signs for --overlap.",
	"delete":    "Removes a webhook endpoint made through the API.",
	"attempts":  "Prints an endpoint's attempts on record, newest first.",
	"message":   "Prints a message with its state and its attempts.",
	"redeliver": "Sends a message again now, whatever its state.",
}

// webhooksFlags are the values of a webhooks verb's flags.
type webhooksFlags struct {
	common
	url, description, format, events, secretFile string
	overlap                                      time.Duration
	status                                       string
	limit                                        int
	after                                        int64
}

// newWebhooksFlags defines the flags of `plantstore webhooks verb`; nil
// for an unknown verb.
func newWebhooksFlags(verb string, getenv func(string) string) (*flag.FlagSet, *webhooksFlags) {
	if !slices.Contains(webhooksVerbs, verb) {
		return nil, nil
	}
	fs := flag.NewFlagSet("webhooks "+verb, flag.ContinueOnError)
	f := &webhooksFlags{}
	switch verb {
	case "create":
		fs.StringVar(&f.url, "endpoint-url", "", "the https URL events are sent to (required; --url is the API's)")
		fs.StringVar(&f.description, "description", "", "what the endpoint is for (at most 256 bytes)")
		fs.StringVar(&f.format, "format", "", "origin (the default: the plant itself, plant.created only) or envelope")
		fs.StringVar(&f.events, "events", "", "the events it gets, comma-separated (default: every event of the format)")
		fs.StringVar(&f.secretFile, "secret-file", "", "a new file to write the endpoint's signing secret to (required)")
	case "rotate":
		fs.StringVar(&f.secretFile, "secret-file", "", "a new file to write the new signing secret to (required)")
		fs.DurationVar(&f.overlap, "overlap", 24*time.Hour, "how long the current secrets keep signing (0s to 168h)")
	case "attempts":
		fs.StringVar(&f.status, "status", "", "only the attempts that succeeded (a 2xx answer) or failed")
		fs.IntVar(&f.limit, "limit", 0, "print one page of at most this many attempts (1 to 1000)")
		fs.Int64Var(&f.after, "after", 0, "print one page of the attempts older than this one (a page's last id)")
	}
	f.register(fs, getenv)
	if slices.Contains(recordVerbs, verb) {
		f.registerOutput(fs)
	}
	return fs, f
}

// recordVerbs are the verbs that read the record of attempts; they print
// JSON or, with -o table, a table.
var recordVerbs = []string{"attempts", "message", "redeliver"}

// webhooksHelp is the text of `plantstore webhooks --help`.
func webhooksHelp() string {
	var b strings.Builder
	b.WriteString(webhooksUsage + "\n\nThe webhook endpoints of the API at --url (or $PLANTSTORE_URL), and their record\n" +
		"of attempts; the token needs the scope webhooks:manage. list, create, rotate and\n" +
		"delete need a server run with --webhooks-api, and print JSON; attempts, message\n" +
		"and redeliver work whenever the server sends webhooks, and print JSON or, with\n" +
		"-o table, a table.\n\n")
	for _, verb := range webhooksVerbs {
		synopsis, _, _ := strings.Cut(webhooksSynopses[verb], "\n\n")
		fmt.Fprintf(&b, "  %s\n      %s\n", synopsis, webhooksSummaries[verb])
	}
	b.WriteString("\nplantstore webhooks VERB --help (or plantstore help webhooks VERB) lists a verb's flags.\n")
	return b.String()
}

// runWebhooks is `plantstore webhooks <verb>`.
func runWebhooks(ctx context.Context, args []string, stdio IO) int {
	if len(args) == 0 {
		return usageError(stdio.Stderr, "webhooks", errors.New(webhooksUsage))
	}
	verb, args := args[0], args[1:]
	switch verb {
	case "-h", "-help", "--help", "help":
		if verb == "help" && len(args) > 0 {
			return runWebhooks(ctx, []string{args[0], "--help"}, stdio)
		}
		fmt.Fprint(stdio.Stdout, webhooksHelp())
		return exitOK
	}
	fs, f := newWebhooksFlags(verb, stdio.Getenv)
	if fs == nil {
		return usageError(stdio.Stderr, "webhooks", fmt.Errorf("unknown verb %q; %s", verb, webhooksUsage))
	}
	cmd := "webhooks " + verb
	positional, code, ok := parseInterleaved(fs, args, stdio, webhooksSynopses[verb])
	if !ok {
		return code
	}
	if slices.Contains(recordVerbs, verb) {
		return runWebhookRecord(ctx, verb, positional, f, setFlags(fs), stdio)
	}
	wantArgs := 0
	if verb == "rotate" || verb == "delete" {
		wantArgs = 1
	}
	if len(positional) != wantArgs {
		if wantArgs == 0 {
			return usageError(stdio.Stderr, cmd, errors.New("takes no arguments"))
		}
		return usageError(stdio.Stderr, cmd, errors.New("wants one endpoint id"))
	}
	if verb == "create" && f.url == "" {
		return usageError(stdio.Stderr, cmd, errors.New("--endpoint-url is required"))
	}
	if (verb == "create" || verb == "rotate") && f.secretFile == "" {
		return usageError(stdio.Stderr, cmd, errors.New("--secret-file is required: the secret is written there, never printed"))
	}
	api, err := f.client()
	if err != nil {
		return usageError(stdio.Stderr, cmd, err)
	}
	out := newEncoder(stdio.Stdout)
	switch verb {
	case "list":
		eps, err := api.WebhookEndpoints(ctx)
		if err != nil {
			return failed(stdio.Stderr, cmd, err)
		}
		return done(stdio, cmd, out.Encode(eps))
	case "delete":
		return done(stdio, cmd, api.DeleteWebhookEndpoint(ctx, positional[0]))
	}
	secretOut, err := newSecretFile(f.secretFile)
	if err != nil {
		return usageError(stdio.Stderr, cmd, err)
	}
	var ep client.WebhookEndpoint
	var secret client.WebhookSecret
	if verb == "create" {
		var events []string
		if f.events != "" {
			events = strings.Split(f.events, ",")
		}
		ep, secret, err = api.CreateWebhookEndpoint(ctx, client.NewWebhookEndpoint{URL: f.url, Description: f.description, Format: f.format, Events: events})
	} else {
		ep, secret, err = api.RotateWebhookSecret(ctx, positional[0], f.overlap)
	}
	if err != nil {
		secretOut.discard()
		return failed(stdio.Stderr, cmd, err)
	}
	if err := secretOut.write(secret); err != nil {
		return failed(stdio.Stderr, cmd, fmt.Errorf("the endpoint %s has a new secret, but writing it to %s failed: %w; rotate again to get another", ep.ID, f.secretFile, err))
	}
	return done(stdio, cmd, out.Encode(ep))
}

// runWebhookRecord is `plantstore webhooks attempts|message|redeliver`.
func runWebhookRecord(ctx context.Context, verb string, positional []string, f *webhooksFlags, set []string, stdio IO) int {
	cmd := "webhooks " + verb
	api, err := f.client()
	if err != nil {
		return usageError(stdio.Stderr, cmd, err)
	}
	if len(positional) != 1 {
		what := "a webhook-id"
		if verb == "attempts" {
			what = "an endpoint"
		}
		return usageError(stdio.Stderr, cmd, errors.New("wants one argument: "+what))
	}
	switch verb {
	case "attempts":
		return webhookAttempts(ctx, api, positional[0], f, set, stdio)
	case "message":
		m, err := api.WebhookMessage(ctx, positional[0])
		if err != nil {
			return failed(stdio.Stderr, cmd, err)
		}
		return done(stdio, cmd, printMessage(stdio.Stdout, f.output, m))
	default: // redeliver
		m, err := api.RedeliverWebhook(ctx, positional[0])
		if err != nil {
			return failed(stdio.Stderr, cmd, err)
		}
		return done(stdio, cmd, printMessage(stdio.Stdout, f.output, m))
	}
}

// webhookAttempts prints an endpoint's attempts: every page, or one with
// --limit or --after.
func webhookAttempts(ctx context.Context, api *client.Client, endpoint string, f *webhooksFlags, set []string, stdio IO) int {
	const cmd = "webhooks attempts"
	if f.status != "" && f.status != "succeeded" && f.status != "failed" {
		return usageError(stdio.Stderr, cmd, fmt.Errorf("--status %q: want succeeded or failed", f.status))
	}
	if slices.Contains(set, "limit") && (f.limit < 1 || f.limit > 1000) {
		return usageError(stdio.Stderr, cmd, fmt.Errorf("--limit %d: want 1 to 1000", f.limit))
	}
	if slices.Contains(set, "after") && f.after < 1 {
		return usageError(stdio.Stderr, cmd, fmt.Errorf("--after %d: want an attempt's id, from 1", f.after))
	}
	opts := client.WebhookAttemptsOptions{Status: f.status, Limit: f.limit, After: f.after}
	if opts.Limit != 0 || opts.After != 0 {
		page, err := api.WebhookAttempts(ctx, endpoint, opts)
		if err != nil {
			return failed(stdio.Stderr, cmd, err)
		}
		if err := printAttempts(stdio.Stdout, f.output, page.Attempts); err != nil {
			return failed(stdio.Stderr, cmd, err)
		}
		if n := page.Next; n != nil {
			next := fmt.Sprintf("plantstore webhooks attempts %s --limit %d --after %d", endpoint, n.Limit, n.After)
			if n.Status != "" {
				next += " --status " + n.Status
			}
			fmt.Fprintf(stdio.Stderr, "more attempts: %s\n", next)
		}
		return exitOK
	}
	attempts := []client.WebhookAttempt{}
	opts.Limit = 1000
	for a, err := range api.AllWebhookAttempts(ctx, endpoint, opts) {
		if err != nil {
			return failed(stdio.Stderr, cmd, err)
		}
		attempts = append(attempts, a)
	}
	return done(stdio, cmd, printAttempts(stdio.Stdout, f.output, attempts))
}

// printAttempts prints attempts as a JSON array or a table for people.
func printAttempts(w io.Writer, format string, attempts []client.WebhookAttempt) error {
	if format != "table" {
		return newEncoder(w).Encode(attempts)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAT\tWEBHOOK-ID\tATTEMPT\tRESULT\tLATENCY\tANSWER")
	for _, a := range attempts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%.1fms\t%s\n", a.ID, a.At.Format("2006-01-02T15:04:05.000Z07:00"), a.WebhookID,
			a.Attempt, result(a), a.LatencyMS, strconv.Quote(clipAnswer(a.Answer)))
	}
	return tw.Flush()
}

// result is an attempt's status code, or why it had none.
func result(a client.WebhookAttempt) string {
	if a.Status == 0 {
		return a.Error
	}
	return strconv.Itoa(a.Status)
}

// clipAnswer is an answer's start for a table's cell.
func clipAnswer(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// printMessage prints a message as one JSON object, or as a line about it
// and the table of its attempts.
func printMessage(w io.Writer, format string, m client.WebhookMessage) error {
	if format != "table" {
		return newEncoder(w).Encode(m)
	}
	fmt.Fprintf(w, "%s  %s  plant %d  version %d  endpoint %s  %s\n", m.ID, m.Type, m.PlantID, m.Version, m.Endpoint, m.State)
	return printAttempts(w, format, m.Attempts)
}

// secretFile is a new file for a secret, made before the API is asked so
// that a path that cannot be written fails before the secret exists.
type secretFile struct{ f *os.File }

func newSecretFile(path string) (*secretFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // the user names the file
	if err != nil {
		return nil, fmt.Errorf("--secret-file: %w", err)
	}
	return &secretFile{f: f}, nil
}

func (s *secretFile) write(secret client.WebhookSecret) error {
	if _, err := s.f.WriteString(secret.Reveal() + "\n"); err != nil {
		_ = s.f.Close()
		return err
	}
	if err := s.f.Sync(); err != nil {
		_ = s.f.Close()
		return err
	}
	return s.f.Close()
}

// discard removes the file: the API made no secret.
func (s *secretFile) discard() {
	_ = s.f.Close()
	_ = os.Remove(s.f.Name())
}
