package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/buildinfo"
	"github.com/plantstore/plantstore/internal/cli"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
)

// printVersion is the "version" subcommand.
func printVersion(stdout io.Writer) int {
	b, _ := json.Marshal(buildinfo.Get())
	fmt.Fprintln(stdout, string(b))
	return 0
}

// healthcheck is the "healthcheck" subcommand, for the image's HEALTHCHECK
// (the runtime image has no curl): it asks the local admin listener's
// /readyz and exits 0 when ready, 1 otherwise.
func healthcheck(args []string, stdout, stderr io.Writer) int {
	fs, addr := healthcheckFlags()
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, "usage: plantstore healthcheck [--admin-addr HOST:PORT]\n\n"+
				"Exits 0 when the server's admin listener answers /readyz with 200, 1 otherwise.\n\nflags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		return 2
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "plantstore healthcheck: --admin-addr %q: want host:port\n", *addr)
		return 2
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+httpserver.ReadyzPath, nil)
	if err != nil {
		fmt.Fprintf(stderr, "plantstore healthcheck: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "dial" {
		// Name the address, where it came from and what to check: a bare
		// "connection refused" says none of it.
		setting := "--admin-addr"
		if !flagGiven(fs, "admin-addr") {
			setting = "PLANTSTORE_ADMIN_ADDR"
			if _, ok := os.LookupEnv(setting); !ok {
				setting = "the default; set --admin-addr or PLANTSTORE_ADMIN_ADDR"
			}
		}
		fmt.Fprintf(stderr, "plantstore healthcheck: cannot connect to %s (%s): %s; is plantstore running, and is that its admin listener's address?\n",
			req.URL, setting, strings.TrimPrefix(opErr.Err.Error(), "connect: "))
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "plantstore healthcheck: %v\n", err)
		return 1
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "plantstore healthcheck: not ready (%s)\n", resp.Status)
		return 1
	}
	return 0
}

// flagGiven reports whether the command line set the named flag.
func flagGiven(fs *flag.FlagSet, name string) (given bool) {
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func healthcheckFlags() (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.Usage = func() {}
	addr := fs.String("admin-addr", envOr("PLANTSTORE_ADMIN_ADDR", ":9090"), "admin listen address of the server to check")
	return fs, addr
}

func envOr(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}

// commandsHelp is the list of commands in plantstore --help, between the
// usage lines and the server's flags.
const commandsHelp = `commands:
  plantstore [flags]                 serve the API (the flags below)
  plantstore plants create|get|list|update|delete|watch ...
                                     the plants of a running server, as its client
  plantstore export [-f FILE]        every plant as NDJSON, in id order (a backup)
  plantstore import [-f FILE]        create the plants of an export
  plantstore webhooks list|create|rotate|delete|attempts|message|redeliver ...
                                     the webhook endpoints of a running server,
                                     their record of attempts; redeliver a message
  plantstore migrate [flags]         bring the store's schema up to date and exit
  plantstore healthcheck [flags]     exit 0 when the local server is ready
  plantstore version | --version     print the version
  plantstore completion bash|zsh     print a shell completion script
  plantstore help [COMMAND]          this text, or a command's

The client commands (plants, export, import, webhooks) find the server with --url or
PLANTSTORE_URL and authenticate with --token, --token-file or PLANTSTORE_TOKEN.
plantstore COMMAND --help lists a command's flags.

`

// serverHelp prints plantstore --help: the server's usage with the list of
// commands after its usage lines.
func serverHelp(stdout io.Writer, args []string) int {
	var usage bytes.Buffer
	if _, err := parseConfig(args, &usage); !errors.Is(err, flag.ErrHelp) {
		return -1
	}
	text := usage.String()
	head, rest, ok := strings.Cut(text, "\n\n")
	if !ok {
		head, rest = "", text
	} else {
		head += "\n\n"
	}
	fmt.Fprint(stdout, head+commandsHelp+rest)
	return 0
}

// wantsHelp reports whether args ask for the usage (-h, --help) before any
// "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// help is `plantstore help [COMMAND]`.
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return serverHelp(stdout, []string{"--help"})
	}
	switch args[0] {
	case "plants", "export", "import", "webhooks":
		words := args[:1]
		if (args[0] == "plants" || args[0] == "webhooks") && len(args) > 1 {
			words = args[:2] // help plants VERB: the verb's own help
		}
		return cli.Run(append(slices.Clip(words), "--help"), cli.IO{Stdout: stdout, Stderr: stderr})
	case "migrate":
		return migrate([]string{"--help"}, stdout, stderr)
	case "healthcheck":
		return healthcheck([]string{"--help"}, stdout, stderr)
	case "version":
		fmt.Fprint(stdout, "usage: plantstore version (or plantstore --version)\n\nPrints the version, the commit and the Go version as one JSON line.\n")
		return 0
	case "completion":
		fmt.Fprint(stdout, completionUsage)
		return 0
	case "help":
		fmt.Fprint(stdout, "usage: plantstore help [COMMAND]\n\nPrints plantstore's usage, or a command's.\n")
		return 0
	}
	fmt.Fprintf(stderr, "plantstore help: unknown command %q (see plantstore --help)\n", args[0])
	return 2
}

const completionUsage = `usage: plantstore completion bash|zsh

Prints a script that completes plantstore's commands and flags:
  bash: source <(plantstore completion bash)
        (or save it in ~/.local/share/bash-completion/completions/plantstore)
  zsh:  plantstore completion zsh > "${fpath[1]}/_plantstore"
        (or source <(plantstore completion zsh) after compinit)
`

// completion is `plantstore completion bash|zsh`.
func completion(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprint(stdout, completionUsage)
		return 0
	}
	if len(args) != 1 || !slices.Contains(cli.Shells, args[0]) {
		fmt.Fprintf(stderr, "plantstore completion: want one shell: %s (see plantstore completion --help)\n", strings.Join(cli.Shells, " or "))
		return 2
	}
	if err := cli.Completion(stdout, args[0], completionCommands()); err != nil {
		fmt.Fprintf(stderr, "plantstore completion: %v\n", err)
		return 1
	}
	return 0
}

// completionCommands are every command, its flags read from the flag sets
// the commands parse, so that completion cannot drift from them.
func completionCommands() []cli.Command {
	var cfg config
	server := newFlagSet(&cfg)
	migrateFS := migrateFlags(&migrateConfig{})
	healthFS, _ := healthcheckFlags()
	commands := []cli.Command{
		{Flags: append(cli.FlagNames(server), "--help", "--version")},
		{Words: []string{"version"}},
		{Words: []string{"healthcheck"}, Flags: cli.FlagNames(healthFS)},
		{Words: []string{"migrate"}, Flags: cli.FlagNames(migrateFS)},
		{Words: []string{"completion"}, Args: cli.Shells},
		{Words: []string{"help"}, Args: []string{"plants", "export", "import", "webhooks", "migrate", "healthcheck", "version", "completion"}},
	}
	return append(commands, cli.Commands()...)
}
