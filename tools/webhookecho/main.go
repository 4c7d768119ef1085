// Command webhookecho is a webhook receiver for trying plantstore's webhooks
// locally and for the benchmarks: it verifies each request's signature with
// the Standard Webhooks library, answers 204 (401 when the signature does
// not verify) and, unless -quiet, prints each event's id and body. The
// secret is read from a file, so that no command line (which ps shows)
// holds it.
//
//	go run ./tools/webhookecho -addr 127.0.0.1:9999 -secret-file try/secret
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/plantstore/plantstore/modules/webhooks"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9999", "address to listen on")
	secretFile := flag.String("secret-file", "", "file whose first line is the endpoint's secret (whsec_...), as in the webhooks file")
	quiet := flag.Bool("quiet", false, "print nothing per event (for benchmarks)")
	flag.Parse()
	data, err := os.ReadFile(*secretFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhookecho: -secret-file:", err)
		os.Exit(2)
	}
	secret, _, _ := strings.Cut(string(data), "\n")
	secret = strings.TrimSpace(secret)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil || !strings.HasPrefix(secret, "whsec_") { // the library accepts an empty secret: do not
		fmt.Fprintln(os.Stderr, "webhookecho: the -secret-file's first line must be the endpoint's whsec_ secret")
		os.Exit(2)
	}
	var received, refused atomic.Int64
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := wh.Verify(body, r.Header); err != nil {
			refused.Add(1)
			log.Printf("refused %s: %v", r.Header.Get(webhooks.HeaderID), err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if n := received.Add(1); !*quiet {
			log.Printf("#%d %s %s", n, r.Header.Get(webhooks.HeaderID), body)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	log.Printf("webhookecho: listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
