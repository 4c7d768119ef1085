package jwtauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// KeySource holds the issuer's public keys. It fetches them at start and
// every refresh interval in the background; a token signed by a key it
// does not know (the issuer rotated) makes it fetch at once, but at most
// once per minKIDRefresh, so that a flood of tokens with made-up kids
// cannot hammer the issuer. When the issuer is down, the keys last fetched
// stay in use: readiness is about serving, and tokens signed by those keys
// are still good. plantstore_auth_jwks_up says whether the last fetch
// worked.
//
// One fetch at a time, shared: a fetch runs on its own, bounded by
// fetchTimeout and by Stop, and whoever needs it (the background refresh,
// requests with an unknown kid) waits for its result, each only as long
// as its own context allows. So a hanging issuer holds a request for at
// most its own deadline, and costs one fetch however many requests wait.
type KeySource struct {
	issuer       string // for discovery; "" with a JWKS URL alone
	jwksURL      string // configured; "" means discovery
	tokenFile    string
	refresh      time.Duration
	client       *http.Client
	log          *zap.Logger
	fetchTimeout time.Duration
	maxWaiters   int // requests that may wait for one fetch; maxKeyWaiters

	keys atomic.Pointer[keySet]

	mu             sync.Mutex
	inFlight       *fetchCall // the fetch under way; nil when none
	lastKIDRefresh time.Time  // when a fetch an unknown kid started began, and again when it ended

	life    context.Context // ends at Stop: fetches under way are abandoned
	endLife context.CancelFunc
	fetches sync.WaitGroup // fetch goroutines, waited for by Stop

	up          prometheus.Gauge
	lastSuccess prometheus.Gauge
	count       prometheus.Gauge
	fetchCount  *prometheus.CounterVec

	started bool // Start ran; the background refresh closes done when it ends
	done    chan struct{}
}

// fetchCall is one fetch, shared by all who wait for it: err is set before
// done is closed.
type fetchCall struct {
	done    chan struct{}
	err     error
	waiters int  // requests with an unknown kid waiting for it, under KeySource.mu
	byKID   bool // started by an unknown kid: its end also starts minKIDRefresh
}

// minKIDRefresh is the least time between two fetches caused by unknown
// kids.
const minKIDRefresh = 5 * time.Second

// fetchTimeout bounds one fetch (discovery and JWKS together).
const fetchTimeout = 10 * time.Second

// maxKeyWaiters bounds the requests that wait for one fetch; those beyond
// are refused as unknown_key at once, so that a flood of made-up kids
// while the issuer hangs does not hold a pile of connections.
const maxKeyWaiters = 64

// maxDocumentBytes bounds a discovery document or JWKS read from the issuer.
const maxDocumentBytes = 1 << 20

// retryDelay is how soon a failed background fetch is tried again (or the
// refresh interval, if shorter).
const retryDelay = 15 * time.Second

// NewKeySource builds the source for cfg (which must be Enabled); Start
// fetches. Its metrics are registered on reg.
func NewKeySource(cfg Config, log *zap.Logger, reg prometheus.Registerer) (*KeySource, error) {
	client, err := newHTTPClient(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	k := &KeySource{
		issuer: cfg.Issuer, jwksURL: cfg.JWKSURL, tokenFile: cfg.FetchToken,
		refresh: cfg.Refresh, client: client, log: log,
		fetchTimeout: fetchTimeout, maxWaiters: maxKeyWaiters,
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plantstore_auth_jwks_up",
			Help: "1 when the last fetch of the JWT issuer's keys worked, 0 when it failed (the keys fetched before stay in use).",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plantstore_auth_jwks_last_success_timestamp_seconds",
			Help: "When the JWT issuer's keys were last fetched, Unix seconds; 0 before the first success.",
		}),
		count: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plantstore_auth_jwks_keys",
			Help: "JWT signing keys in use.",
		}),
		fetchCount: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_auth_jwks_fetches_total",
			Help: "Fetches of the JWT issuer's keys, by result (ok, error).",
		}, []string{"result"}),
		done: make(chan struct{}),
	}
	if k.refresh <= 0 {
		k.refresh = defaultRefresh
	}
	k.fetchCount.WithLabelValues("ok")
	k.fetchCount.WithLabelValues("error")
	k.keys.Store(&keySet{})
	k.life, k.endLife = context.WithCancel(context.Background())
	for _, c := range []prometheus.Collector{k.up, k.lastSuccess, k.count, k.fetchCount} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func newHTTPClient(caFile string) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile) //nolint:gosec // G304: the operator's --jwt-ca-file
		if err != nil {
			return nil, fmt.Errorf("--jwt-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--jwt-ca-file %s: no PEM certificate in it", caFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	// No redirects: the keys come from the URL configured or discovered.
	// No client timeout: each fetch's context bounds it (fetchTimeout).
	return &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}, nil
}

// Start fetches the keys once, then keeps them fresh in the background. A
// failed first fetch does not stop the program: static tokens still work,
// JWTs are refused as unknown_key until the issuer answers, and the
// failure is logged and shown by plantstore_auth_jwks_up.
func (k *KeySource) Start(ctx context.Context) error {
	ok := k.Refresh(ctx) == nil
	// The refresh outlives the start's deadline, until Stop ends it (a
	// fetch under way included).
	k.started = true
	go k.loop(ok)
	return nil
}

// Stop ends the background refresh and any fetch under way; a second
// Stop, or one without Start, does nothing more.
func (k *KeySource) Stop(context.Context) error {
	k.endLife()
	if k.started {
		<-k.done
	}
	k.fetches.Wait()
	return nil
}

func (k *KeySource) loop(lastOK bool) {
	defer close(k.done)
	for {
		wait := k.refresh
		if !lastOK && retryDelay < wait {
			wait = retryDelay
		}
		timer := time.NewTimer(wait)
		select {
		case <-k.life.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		lastOK = k.Refresh(k.life) == nil
	}
}

// Refresh fetches the keys now, or joins the fetch under way, and waits
// for it as long as ctx allows. When the fetch works its keys are in use;
// when it fails, the keys in use stay.
func (k *KeySource) Refresh(ctx context.Context) error {
	k.mu.Lock()
	call := k.startFetchLocked()
	k.mu.Unlock()
	select {
	case <-call.done:
		return call.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startFetchLocked returns the fetch under way, or starts one; k.mu is held.
func (k *KeySource) startFetchLocked() *fetchCall {
	if k.inFlight != nil {
		return k.inFlight
	}
	call := &fetchCall{done: make(chan struct{})}
	k.inFlight = call
	k.fetches.Add(1)
	go func() {
		defer k.fetches.Done()
		ctx, cancel := context.WithTimeout(k.life, k.fetchTimeout)
		err := k.fetchAndUse(ctx)
		cancel()
		if err != nil {
			// Logged once per fetch, not once per waiter.
			k.log.Warn("JWT keys not fetched; keeping the keys in use", zap.Error(err), zap.Int("keys", k.keys.Load().len()))
		}
		k.mu.Lock()
		k.inFlight = nil
		if call.byKID {
			// The window counts from the end too: an issuer that hangs
			// for longer than minKIDRefresh still gets one fetch per
			// window, not one after the other.
			k.lastKIDRefresh = time.Now()
		}
		k.mu.Unlock()
		call.err = err
		close(call.done)
	}()
	return call
}

// fetchAndUse fetches the keys and puts them in use, keeping the metrics.
func (k *KeySource) fetchAndUse(ctx context.Context) error {
	set, err := k.fetch(ctx)
	if err != nil {
		k.up.Set(0)
		k.fetchCount.WithLabelValues("error").Inc()
		return err
	}
	k.keys.Store(set)
	k.up.Set(1)
	k.lastSuccess.Set(float64(time.Now().UnixNano()) / 1e9)
	k.count.Set(float64(set.len()))
	k.fetchCount.WithLabelValues("ok").Inc()
	return nil
}

// key returns the key with kid (any key, when kid is "" and there is one).
// On a miss it waits, as long as ctx allows, for the fetch under way or
// for a new one; but within minKIDRefresh of the last fetch a miss started,
// with none under way, or when maxWaiters already wait, it answers at once
// that there is no such key.
func (k *KeySource) key(ctx context.Context, kid string) (verifyKey, bool) {
	if key, ok := k.keys.Load().lookup(kid); ok {
		return key, true
	}
	k.mu.Lock()
	call := k.inFlight
	if call == nil {
		now := time.Now()
		if !k.lastKIDRefresh.IsZero() && now.Sub(k.lastKIDRefresh) < minKIDRefresh {
			k.mu.Unlock()
			return k.keys.Load().lookup(kid) // a fetch may have ended since the first look
		}
		k.lastKIDRefresh = now
		call = k.startFetchLocked()
		call.byKID = true
	}
	if call.waiters >= k.maxWaiters {
		k.mu.Unlock()
		return verifyKey{}, false
	}
	call.waiters++
	k.mu.Unlock()
	select {
	case <-call.done:
		return k.keys.Load().lookup(kid)
	case <-ctx.Done():
		return verifyKey{}, false
	}
}

func (k *KeySource) fetch(ctx context.Context) (*keySet, error) {
	jwksURL := k.jwksURL
	if jwksURL == "" {
		var err error
		if jwksURL, err = k.discover(ctx); err != nil {
			return nil, err
		}
	}
	body, err := k.get(ctx, jwksURL)
	if err != nil {
		return nil, err
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("JWKS from %s: %w", jwksURL, err)
	}
	return newKeySet(set, k.log), nil
}

// discover reads the issuer's OpenID configuration for its jwks_uri. The
// document must name the issuer configured (OpenID Connect Discovery §4.3).
func (k *KeySource) discover(ctx context.Context) (string, error) {
	url := strings.TrimSuffix(k.issuer, "/") + "/.well-known/openid-configuration"
	body, err := k.get(ctx, url)
	if err != nil {
		return "", err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("discovery document %s: %w", url, err)
	}
	if doc.Issuer != k.issuer {
		return "", fmt.Errorf("discovery document %s names the issuer %q, not %q", url, doc.Issuer, k.issuer)
	}
	if err := checkURL(doc.JWKSURI); err != nil {
		return "", fmt.Errorf("discovery document %s: jwks_uri %q: %w", url, doc.JWKSURI, err)
	}
	return doc.JWKSURI, nil
}

func (k *KeySource) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if k.tokenFile != "" {
		// Read at every fetch: the kubelet rotates the projected token.
		tok, err := os.ReadFile(k.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--jwt-fetch-token-file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxDocumentBytes {
		return nil, fmt.Errorf("GET %s: more than %d bytes", url, maxDocumentBytes)
	}
	return body, nil
}
