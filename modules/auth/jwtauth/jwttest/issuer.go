// Package jwttest is an OIDC issuer for tests and benchmarks: an HTTP
// server on loopback serving a discovery document and a JWKS of keys made
// on the spot, and tokens signed with them. Its JOSE is written with the
// standard library alone, on purpose: a verifier tested against tokens
// made by its own library would share that library's mistakes.
package jwttest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Issuer serves /.well-known/openid-configuration and /jwks.
type Issuer struct {
	URL     string // the issuer, also its iss: http://127.0.0.1:<port>
	JWKSURL string

	srv *httptest.Server

	mu        sync.Mutex
	published []*Key

	down      atomic.Bool
	hold      atomic.Pointer[chan struct{}] // while set, requests wait for it to close
	requests  atomic.Int64                  // every request that reached the issuer
	pending   atomic.Int64                  // requests being answered now
	jwksGets  atomic.Int64
	lastAuthz atomic.Value // string: the Authorization header of the last request
}

// LastAuthorization is the Authorization header of the last request the
// issuer got ("" for none).
func (i *Issuer) LastAuthorization() string {
	s, _ := i.lastAuthz.Load().(string)
	return s
}

// NewIssuer starts an issuer listening on addr ("127.0.0.1:0" for any
// port). Close stops it.
func NewIssuer(addr string) (*Issuer, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	i := &Issuer{}
	i.srv = httptest.NewUnstartedServer(http.HandlerFunc(i.serve))
	_ = i.srv.Listener.Close() // httptest's own, replaced by ln
	i.srv.Listener = ln
	i.srv.Start()
	i.URL = i.srv.URL
	i.JWKSURL = i.srv.URL + "/jwks"
	return i, nil
}

// NewInProcessIssuer is an issuer that listens on no socket: it is
// reached through Transport, so that a test under testing/synctest, whose
// bubble cannot wait on network I/O, can make it hang or answer on the
// bubble's clock. Its URL is loopback http, as a verifier's configuration
// requires; nothing connects to it.
func NewInProcessIssuer() *Issuer {
	return &Issuer{URL: inProcessURL, JWKSURL: inProcessURL + "/jwks"}
}

// inProcessURL names an in-process issuer: a port nothing listens on.
const inProcessURL = "http://127.0.0.1:1"

// Transport answers each request by calling the issuer's handler in the
// caller's goroutine. A request whose context ends while the issuer holds
// it fails with the context's error, as it would over a socket.
func (i *Issuer) Transport() http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		i.serve(rec, r)
		if err := r.Context().Err(); err != nil {
			return nil, err
		}
		return rec.Result(), nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Close stops the server; an in-process issuer has none.
func (i *Issuer) Close() {
	if i.srv != nil {
		i.srv.Close()
	}
}

// SetDown makes the issuer answer 503 to everything (true), or serve again.
func (i *Issuer) SetDown(down bool) { i.down.Store(down) }

// Hold makes the issuer hang: each request from now on waits, without an
// answer, until release is called or its client gives up. release may be
// called more than once.
func (i *Issuer) Hold() (release func()) {
	ch := make(chan struct{})
	i.hold.Store(&ch)
	var once sync.Once
	return func() {
		once.Do(func() {
			i.hold.CompareAndSwap(&ch, nil)
			close(ch)
		})
	}
}

// Requests is how many requests reached the issuer, answered or not.
func (i *Issuer) Requests() int { return int(i.requests.Load()) }

// Pending is how many requests the issuer is answering (or holding) now.
func (i *Issuer) Pending() int { return int(i.pending.Load()) }

// JWKSFetches is how many times the JWKS was served.
func (i *Issuer) JWKSFetches() int { return int(i.jwksGets.Load()) }

// Publish makes keys the JWKS, replacing what it held (a rotation).
func (i *Issuer) Publish(keys ...*Key) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.published = keys
}

func (i *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	i.pending.Add(1)
	defer i.pending.Add(-1)
	i.requests.Add(1)
	i.lastAuthz.Store(r.Header.Get("Authorization"))
	if hold := i.hold.Load(); hold != nil {
		select {
		case <-*hold:
		case <-r.Context().Done():
			return
		}
	}
	if i.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": i.URL, "jwks_uri": i.JWKSURL})
	case "/jwks":
		i.jwksGets.Add(1)
		i.mu.Lock()
		keys := make([]map[string]string, 0, len(i.published))
		for _, k := range i.published {
			keys = append(keys, k.JWK())
		}
		i.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	default:
		http.NotFound(w, r)
	}
}

// Key is a signing key: RS256, ES256 or EdDSA.
type Key struct {
	KID  string
	Alg  string
	priv crypto.Signer
}

// NewKey makes a key for alg ("RS256", "ES256" or "EdDSA") named kid.
func NewKey(alg, kid string) (*Key, error) {
	var priv crypto.Signer
	var err error
	switch alg {
	case "RS256":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "EdDSA":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, fmt.Errorf("jwttest: no key for %q", alg)
	}
	if err != nil {
		return nil, err
	}
	return &Key{KID: kid, Alg: alg, priv: priv}, nil
}

// JWK is the key's public half as a JWK (with kid, alg and use).
func (k *Key) JWK() map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	jwk := map[string]string{"kid": k.KID, "alg": k.Alg, "use": "sig"}
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		jwk["kty"], jwk["n"], jwk["e"] = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		ecdh, _ := pub.ECDH()
		raw := ecdh.Bytes() // 0x04 || X || Y
		jwk["kty"], jwk["crv"], jwk["x"], jwk["y"] = "EC", "P-256", b64(raw[1:33]), b64(raw[33:])
	case ed25519.PublicKey:
		jwk["kty"], jwk["crv"], jwk["x"] = "OKP", "Ed25519", b64(pub)
	}
	return jwk
}

// PublicKeyBytes is the public key as in its JWK's "n" or "x": the bytes
// an HMAC-confusion attacker would use as the secret.
func (k *Key) PublicKeyBytes() []byte {
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		return pub.N.Bytes()
	case *ecdsa.PublicKey:
		ecdh, _ := pub.ECDH()
		return ecdh.Bytes()
	case ed25519.PublicKey:
		return pub
	}
	return nil
}

// Claims are a token's claims for issuer i: iss, aud, sub, iat now, exp
// after ttl. Tests change or delete entries before signing.
func (i *Issuer) Claims(aud, sub string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{"iss": i.URL, "aud": aud, "sub": sub, "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
}

// Sign returns the compact JWS of claims signed by k, with k's kid and alg
// in its header.
func (k *Key) Sign(claims map[string]any) string {
	return k.SignWithHeader(map[string]any{"alg": k.Alg, "kid": k.KID, "typ": "JWT"}, claims)
}

// SignWithHeader signs claims under header as it is (a test may lie in it:
// another kid, another alg).
func (k *Key) SignWithHeader(header, claims map[string]any) string {
	input := encode(header) + "." + encode(claims)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch priv := k.priv.(type) {
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, priv, crypto.SHA256, digest[:])
	case *ecdsa.PrivateKey:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, priv, digest[:])
		sig = make([]byte, 64) // JWS: R || S, each 32 bytes (RFC 7518 §3.4)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case ed25519.PrivateKey:
		sig = ed25519.Sign(priv, []byte(input))
	}
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Unsigned is claims under {"alg":"none"} with an empty signature.
func Unsigned(kid string, claims map[string]any) string {
	return encode(map[string]any{"alg": "none", "kid": kid, "typ": "JWT"}) + "." + encode(claims) + "."
}

// HMAC signs claims with HS256 using secret as the key: with a public key
// as the secret, the algorithm-confusion attack.
func HMAC(kid string, secret []byte, claims map[string]any) string {
	input := encode(map[string]any{"alg": "HS256", "kid": kid, "typ": "JWT"}) + "." + encode(claims)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
