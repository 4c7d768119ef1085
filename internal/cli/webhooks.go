package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/plantstore/plantstore/client"
)

// webhooksVerbs are the verbs of `plantstore webhooks`, in the usage's
// order.
var webhooksVerbs = []string{"attempts", "message", "redeliver"}

const webhooksUsage = "usage: plantstore webhooks attempts|message|redeliver [flags]"

// webhooksSynopses are each verb's usage line and what it does.
var webhooksSynopses = map[string]string{
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
	"attempts":  "Prints an endpoint's attempts on record, newest first.",
	"message":   "Prints a message with its state and its attempts.",
	"redeliver": "Sends a message again now, whatever its state.",
}

// webhooksFlags are the values of a webhooks verb's flags.
type webhooksFlags struct {
	common
	status string
	limit  int
	after  int64
}

// newWebhooksFlags defines the flags of `plantstore webhooks verb`; nil
// for an unknown verb.
func newWebhooksFlags(verb string, getenv func(string) string) (*flag.FlagSet, *webhooksFlags) {
	if !slices.Contains(webhooksVerbs, verb) {
		return nil, nil
	}
	fs := flag.NewFlagSet("webhooks "+verb, flag.ContinueOnError)
	f := &webhooksFlags{}
	if verb == "attempts" {
		fs.StringVar(&f.status, "status", "", "only the attempts that succeeded (a 2xx answer) or failed")
		fs.IntVar(&f.limit, "limit", 0, "print one page of at most this many attempts (1 to 1000)")
		fs.Int64Var(&f.after, "after", 0, "print one page of the attempts older than this one (a page's last id)")
	}
	f.register(fs, getenv)
	f.registerOutput(fs)
	return fs, f
}

// webhooksHelp is the text of `plantstore webhooks --help`.
func webhooksHelp() string {
	var b strings.Builder
	b.WriteString(webhooksUsage + "\n\nThe webhooks' record of attempts at --url (or $PLANTSTORE_URL); the token needs\n" +
		"the scope webhooks:manage. Each prints JSON, or a table with -o table.\n\n")
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
		return webhookAttempts(ctx, api, positional[0], f, setFlags(fs), stdio)
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
