// Package cli is the client side of the plantstore binary: `plantstore
// plants create|get|list|update|delete|watch`, `plantstore export` and
// `plantstore import`, built on the Go client (package client), and the
// shell completion scripts of the whole binary.
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
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

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
	}
	fmt.Fprintf(stdio.Stderr, "plantstore: unknown command %q\n", args[0])
	return exitUsage
}

// common are the flags every command has: where the API is and how to
// authenticate, each with its environment twin (a flag wins). The twins are
// read after parsing, not made the flags' defaults: a default is printed by
// --help and with every usage error, and a token must never be printed.
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
	fs.StringVar(&c.output, "o", "json", "output format: json or table")
}

// client builds the API client; an error is a usage error. It never
// holds the token: the token is a secret, and errors are printed.
func (c *common) client() (*client.Client, error) {
	if c.output != "json" && c.output != "table" {
		return nil, fmt.Errorf("-o %q: want json or table", c.output)
	}
	url := cmp.Or(c.url, c.getenv("PLANTSTORE_URL"), defaultURL)
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
	return client.New(url, client.WithToken(token))
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
	if apiErr, ok := errors.AsType[*client.Error](err); ok {
		short := fmt.Sprintf("%d %s: %s", apiErr.Status, http.StatusText(apiErr.Status), apiErr.Message)
		msg = strings.Replace(msg, apiErr.Error(), short, 1)
	}
	return msg
}
