// Command webhookecho is a webhook receiver for trying plantstore's webhooks
// locally and for the benchmarks: it verifies each request's signature with
// the Standard Webhooks library, answers 204 (401 when the signature does
// not verify) and, unless -quiet, prints each event's id and body.
//
//	go run ./tools/webhookecho -addr 127.0.0.1:9999 -secret whsec_...
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync/atomic"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9999", "address to listen on")
	secret := flag.String("secret", "", "the endpoint's secret (whsec_...), as in the webhooks file")
	quiet := flag.Bool("quiet", false, "print nothing per event (for benchmarks)")
	flag.Parse()
	wh, err := standardwebhooks.NewWebhook(*secret)
	if err != nil || *secret == "" { // the library accepts an empty secret: do not
		fmt.Fprintln(os.Stderr, "webhookecho: -secret must be the endpoint's whsec_ secret")
		os.Exit(2)
	}
	var received, refused atomic.Int64
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := wh.Verify(body, r.Header); err != nil {
			refused.Add(1)
			log.Printf("refused %s: %v", r.Header.Get("webhook-id"), err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if n := received.Add(1); !*quiet {
			log.Printf("#%d %s %s", n, r.Header.Get("webhook-id"), body)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	log.Printf("webhookecho: listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
