package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/client"
)

// webhooksVerbs are the verbs of `plantstore webhooks`, in the usage's
// order.
var webhooksVerbs = []string{"list", "create", "rotate", "delete"}

const webhooksUsage = "usage: plantstore webhooks list|create|rotate|delete [flags]"

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
}

var webhooksSummaries = map[string]string{
	"list":   "Prints every webhook endpoint, without secrets.",
	"create": "Makes a webhook endpoint; its secret goes to --secret-file.",
	"rotate": "Gives an endpoint a new secret (to --secret-file); the old signs for --overlap.",
	"delete": "Removes a webhook endpoint made through the API.",
}

type webhooksFlags struct {
	common
	url, description, format, events, secretFile string
	overlap                                      time.Duration
}

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
	}
	f.register(fs, getenv)
	return fs, f
}

func webhooksHelp() string {
	var b strings.Builder
	b.WriteString(webhooksUsage + "\n\nThe webhook endpoints of the API at --url (or $PLANTSTORE_URL), served with\n" +
		"--webhooks-api; the token needs the scope webhooks:manage. Output is JSON.\n\n")
	for _, verb := range webhooksVerbs {
		synopsis, _, _ := strings.Cut(webhooksSynopses[verb], "\n\n")
		fmt.Fprintf(&b, "  %s\n      %s\n", synopsis, webhooksSummaries[verb])
	}
	b.WriteString("\nplantstore webhooks VERB --help lists a verb's flags.\n")
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
