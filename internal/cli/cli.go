// Package cli is the client side of the plantstore binary: `plantstore
// plants create|get|list|update|delete`, `plantstore export` and
// `plantstore import`, built on the Go client (package client).
//
// Exit codes: 0 on success, 1 for a failed operation (the server's message
// on stderr), 2 for a usage error.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
// authenticate, each with its environment twin (a flag wins).
type common struct {
	url, token, tokenFile, output string
}

func (c *common) register(fs *flag.FlagSet, getenv func(string) string) {
	url := getenv("PLANTSTORE_URL")
	if url == "" {
		url = "http://127.0.0.1:8080"
	}
	fs.StringVar(&c.url, "url", url, "base URL of the plantstore API (env PLANTSTORE_URL)")
	fs.StringVar(&c.token, "token", getenv("PLANTSTORE_TOKEN"), "bearer token (env PLANTSTORE_TOKEN)")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding the bearer token (its first line)")
	fs.StringVar(&c.output, "o", "json", "output format: json or table")
}

// client builds the API client; an error is a usage error.
func (c *common) client() (*client.Client, error) {
	if c.output != "json" && c.output != "table" {
		return nil, fmt.Errorf("-o %q: want json or table", c.output)
	}
	token := c.token
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
	return client.New(c.url, client.WithToken(token))
}

// parse parses a command's flags; ok is false with the exit code to return.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	return 0, true
}

// usageError prints a usage problem and returns exit code 2.
func usageError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "plantstore %s: %v\n", cmd, err)
	return exitUsage
}

// failed prints a failed operation (the server's message is in err) and
// returns exit code 1.
func failed(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "plantstore %s: %v\n", cmd, err)
	return exitFailed
}
