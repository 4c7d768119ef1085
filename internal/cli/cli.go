// Package cli is the client side of the plantstore binary: `plantstore
// plants create|get|list|update|delete|watch`, `plantstore export`,
// `plantstore import` and `plantstore webhooks
// list|create|rotate|delete|attempts|message|redeliver`, built on the Go
// client (package client), and the shell completion scripts of the whole
// binary.
//
// Exit codes: 0 on success, 1 for a failed operation (the server's message
// on stderr), 2 for a usage error.
package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/plantstore/plantstore/client"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// IO is what a command reads and writes; tests pass their own.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// Run runs one CLI command; args start with the command's name.
func Run(args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "plants":
		return runPlants(ctx, args[1:], stdio)
	case "export":
		return runExport(ctx, args[1:], stdio)
	case "import":
		return runImport(ctx, args[1:], stdio)
	case "webhooks":
		return runWebhooks(ctx, args[1:], stdio)
	}
	fmt.Fprintf(stdio.Stderr, "plantstore: unknown command %q\n", args[0])
	return exitUsage
}

// common are the flags every command has: where the API is and how to
// authenticate, each with its environment twin (a flag wins). The twins are
// read after parsing, not made the flags' defaults: a default is printed by
// --help and with every usage error, and a token must never be printed.
// -o is only on the commands whose output it changes (registerOutput).
type common struct {
	url, token, tokenFile, output string
	getenv                        func(string) string
}

// defaultURL is where the API is when neither --url nor PLANTSTORE_URL says.
const defaultURL = "http://127.0.0.1:8080"

func (c *common) register(fs *flag.FlagSet, getenv func(string) string) {
	c.getenv = getenv
	fs.StringVar(&c.url, "url", "", "base URL of the plantstore API (default $PLANTSTORE_URL, else "+defaultURL+")")
	fs.StringVar(&c.token, "token", "", "bearer token (default $PLANTSTORE_TOKEN)")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding the bearer token (its first line)")
}

// registerOutput adds -o, for a command that prints plants or counts.
func (c *common) registerOutput(fs *flag.FlagSet) {
	fs.StringVar(&c.output, "o", "json", "output format: json or table")
}

// client builds the API client; an error is a usage error. It never
// holds the token: the token is a secret, and errors are printed.
func (c *common) client() (*client.Client, error) {
	if c.output != "" && c.output != "json" && c.output != "table" {
		return nil, fmt.Errorf("-o %q: want json or table", c.output)
	}
	base, err := c.baseURL()
	if err != nil {
		return nil, err
	}
	token := cmp.Or(c.token, c.getenv("PLANTSTORE_TOKEN"))
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		token, _, _ = strings.Cut(strings.TrimSpace(string(b)), "\n")
		token = strings.TrimSpace(token)
	}
	if token == "" {
		return nil, errors.New("no token: set --token, --token-file or PLANTSTORE_TOKEN")
	}
	// The transport names the URL and where it came from when nothing
	// answers there: a bare "connection refused" says neither.
	hc := &http.Client{Timeout: 30 * time.Second, Transport: unreachableHint{base: base}}
	return client.New(base.url, client.WithToken(token), client.WithHTTPClient(hc))
}

// apiURL is the API's base URL and the setting that gave it, for messages.
type apiURL struct {
	url, setting string
}

// baseURL is the API's base URL from --url, PLANTSTORE_URL or the default.
// A value without a scheme (127.0.0.1:8080) is refused with the URL it
// probably meant rather than with url.Parse's words about colons.
func (c *common) baseURL() (apiURL, error) {
	u := apiURL{url: c.url, setting: "--url"}
	if u.url == "" {
		u = apiURL{url: c.getenv("PLANTSTORE_URL"), setting: "PLANTSTORE_URL"}
	}
	if u.url == "" {
		return apiURL{url: defaultURL, setting: "the default; set --url or PLANTSTORE_URL"}, nil
	}
	parsed, err := url.Parse(u.url)
	if err == nil && (parsed.Scheme == "http" || parsed.Scheme == "https") && parsed.Host != "" {
		return u, nil
	}
	if !strings.Contains(u.url, "://") {
		return u, fmt.Errorf("%s %q: want a URL with its scheme, such as http://%s", u.setting, u.url, u.url)
	}
	return u, fmt.Errorf("%s %q: want an http:// or https:// URL such as %s", u.setting, u.url, defaultURL)
}

// unreachableHint is http.DefaultTransport whose failures to connect are
// unreachableErrors.
type unreachableHint struct{ base apiURL }

func (h unreachableHint) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "dial" {
		return nil, &unreachableError{base: h.base, err: opErr}
	}
	return resp, err
}

// unreachableError is a request that found no server at the API's URL.
type unreachableError struct {
	base apiURL
	err  *net.OpError
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot connect to %s (%s): %s; is plantstore running, and is that its API address?",
		e.base.url, e.base.setting, dialReason(e.err))
}

func (e *unreachableError) Unwrap() error { return e.err }

// dialReason is why a dial failed, without the addresses the message
// names already: "connection refused", "lookup x: no such host".
func dialReason(err *net.OpError) string {
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		return errno.Error()
	}
	return strings.TrimPrefix(err.Err.Error(), "connect: ")
}

// parse parses a command's flags; ok is false with the exit code to return.
// --help prints the command's usage on stdout (exit 0); a mistake is one
// line on stderr (exit 2), without the usage, which would bury it.
func parse(fs *flag.FlagSet, args []string, stdio IO, synopsis string) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdio.Stdout, fs, synopsis)
		return exitOK, false
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
		if _, err := strconv.ParseInt("-"+name, 10, 64); err == nil && takesID(fs.Name()) {
			// A negative id reads as a flag; after -- it is an argument.
			msg = fmt.Sprintf("unknown flag -%s; put -- before a negative id: plantstore %s [flags] -- -%s", name, fs.Name(), name)
		}
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		msg = "--" + name + " needs a value"
	}
	fmt.Fprintf(stdio.Stderr, "plantstore %s: %s (see plantstore %s --help)\n", fs.Name(), msg, fs.Name())
	return exitUsage, false
}

// printHelp prints a command's usage line, what it does and its flags.
func printHelp(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(w, "usage: %s\n\nflags:\n", synopsis)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// usageError prints a usage problem and returns exit code 2.
func usageError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "plantstore %s: %s\n", cmd, message(err))
	return exitUsage
}

// failed prints a failed operation (the server's message is in err) and
// returns exit code 1.
func failed(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "plantstore %s: %s\n", cmd, message(err))
	return exitFailed
}

// message is err's text for a line that already starts with "plantstore
// CMD:": the client's errors start with "plantstore: " too, for Go
// programs, which the line would repeat.
func message(err error) string {
	msg := err.Error()
	if unreachable, ok := errors.AsType[*unreachableError](err); ok {
		// Without net/http's `Get "URL": ` before it: the message names the URL.
		if urlErr, ok := errors.AsType[*url.Error](err); ok {
			msg = strings.Replace(msg, urlErr.Error(), unreachable.Error(), 1)
		}
	}
	if apiErr, ok := errors.AsType[*client.Error](err); ok {
		short := fmt.Sprintf("%d %s: %s", apiErr.Status, http.StatusText(apiErr.Status), apiErr.Message)
		msg = strings.Replace(msg, apiErr.Error(), short, 1)
	}
	return msg
}
