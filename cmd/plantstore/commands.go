package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/plantstore/plantstore/internal/buildinfo"
	httpserver "github.com/plantstore/plantstore/modules/http"
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
func healthcheck(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("admin-addr", envOr("PLANTSTORE_ADMIN_ADDR", ":9090"), "admin listen address of the server to check")
	if err := fs.Parse(args); err != nil {
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

func envOr(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}
