// Command jwtissuer is a throwaway OIDC issuer for trying JWTs and
// measuring their cost: it serves discovery and a JWKS on loopback, prints
// one signed JWT on stdout, and serves until interrupted.
//
//	go run ./modules/auth/jwtauth/jwttest/jwtissuer -addr 127.0.0.1:18099 > /tmp/jwt &
//	PLANTSTORE_JWT_ISSUER=http://127.0.0.1:18099 PLANTSTORE_JWT_AUDIENCE=plantstore plantstore ...
//	curl -H "Authorization: Bearer $(cat /tmp/jwt)" ...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/plantstore/plantstore/modules/auth/jwtauth/jwttest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "jwtissuer:", err)
		os.Exit(2)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:18099", "loopback address to serve discovery and the JWKS on")
	alg := flag.String("alg", "ES256", "signing algorithm: RS256, ES256 or EdDSA")
	audience := flag.String("audience", "plantstore", "the token's aud")
	sub := flag.String("sub", "bench", "the token's sub")
	scope := flag.String("scope", "plants:read plants:write", "the token's scope claim")
	ttl := flag.Duration("ttl", 2*time.Hour, "how long the token is valid")
	flag.Parse()

	key, err := jwttest.NewKey(*alg, "bench-1")
	if err != nil {
		return err
	}
	iss, err := jwttest.NewIssuer(*addr)
	if err != nil {
		return err
	}
	defer iss.Close()
	iss.Publish(key)
	claims := iss.Claims(*audience, *sub, *ttl)
	claims["scope"] = *scope
	fmt.Println(key.Sign(claims))
	fmt.Fprintf(os.Stderr, "jwtissuer: issuer %s, JWKS %s; the token is on stdout\n", iss.URL, iss.JWKSURL)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}
