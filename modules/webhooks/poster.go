package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/internal/buildinfo"
	"github.com/plantstore/plantstore/modules/outbox"
)

// The headers of Standard Webhooks 1.0 that every request carries.
const (
	// HeaderID is the event's id for this endpoint, the same on every
	// attempt: a receiver drops a duplicate by it.
	HeaderID = "webhook-id"
	// HeaderTimestamp is the attempt's time, in Unix seconds.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature is Sign's: "v1," and a signature per active secret.
	HeaderSignature = "webhook-signature"
)

// maxAnswerBytes is as much of a receiver's answer as is read: enough to
// reuse the connection after a short answer, and no more, whatever the
// receiver sends.
const maxAnswerBytes = 64 << 10

// Outcomes of an attempt, the "outcome" label of the attempts metric.
const (
	outcomeDelivered = "delivered" // a 2xx answer
	outcomeFailed    = "failed"    // any other answer
	outcomeGone      = "gone"      // 410: the endpoint wants no more
	outcomeTimeout   = "timeout"
	outcomeError     = "error"   // no answer: connection refused, reset, TLS
	outcomeRefused   = "refused" // an internal destination (see guard.go)
)

// attemptResult is what one attempt came to.
type attemptResult struct {
	outcome    string
	status     int           // 0 without an answer
	retryAfter time.Duration // the answer's Retry-After, on 429 and 503
	reason     string        // why it failed, for the log and the outbox; never the URL
	// record is the attempt as the outbox keeps it on record (its time,
	// latency, error class and the answer's first bytes).
	record outbox.Attempt
}

// poster makes attempts: one signed POST each.
type poster struct {
	client    *http.Client
	userAgent string
	tracer    trace.Tracer
	now       func() time.Time
}

func newPoster(cfg Config, tp trace.TracerProvider) *poster {
	transport := &http.Transport{
		Proxy:               nil, // a proxy would dial for us, past the guard
		DialContext:         newDialer(cfg.AllowPrivate).DialContext,
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: cfg.Timeout,
		MaxIdleConnsPerHost: cfg.Concurrency,
		// The answer's headers count in the 64 KiB read of an answer, as
		// its body does: a receiver that sends more headers than that
		// fails the attempt rather than being read up to the default 10 MB.
		MaxResponseHeaderBytes: maxAnswerBytes,
		IdleConnTimeout:        90 * time.Second,
	}
	return &poster{
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is an answer, and not a 2xx one: following it
			// would send the event where the file does not say.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		userAgent: "plantstore/" + buildinfo.Get().Version + " (webhooks)",
		tracer:    tp.Tracer("github.com/plantstore/plantstore/modules/webhooks"),
		now:       time.Now,
	}
}

// attempt POSTs d to ep once, in ep's format.
func (p *poster) attempt(ctx context.Context, ep Endpoint, d outbox.Delivery) attemptResult {
	// The delivery joins the create's trace: its span's parent is the
	// create's, carried in the outbox.
	parent := ctx
	if d.TraceParent != "" {
		parent = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": d.TraceParent})
	}
	ctx, span := p.tracer.Start(parent, "webhook "+kindOf(d).String(), trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	at, start := p.now(), time.Now()
	r := p.post(ctx, ep, d)
	r.record.At, r.record.Latency, r.record.Status = at, time.Since(start), r.status
	if !span.IsRecording() { // tracing is off: build no attributes
		return r
	}
	span.SetAttributes(attribute.String("webhook.endpoint", ep.Name), attribute.String("webhook.id", d.ID),
		attribute.Int("webhook.attempt", d.Attempt))
	if r.status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", r.status))
	}
	if r.outcome != outcomeDelivered {
		span.SetStatus(codes.Error, r.reason)
	}
	return r
}

func (p *poster) post(ctx context.Context, ep Endpoint, d outbox.Delivery) attemptResult {
	body, err := payload(ep, d)
	if err != nil {
		return attemptResult{outcome: outcomeError, reason: err.Error(), record: outbox.Attempt{Error: outbox.ErrorConnection}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return attemptResult{outcome: outcomeError, reason: "bad request: " + err.Error(), record: outbox.Attempt{Error: outbox.ErrorConnection}}
	}
	ts := p.now()
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", p.userAgent)
	h.Set(HeaderID, d.ID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Sign(ep.Secrets, d.ID, ts, body)) // the bytes sent, envelope and all
	if d.TraceParent != "" {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return failure(err)
	}
	// The first bytes are kept on record; the rest of the read only lets
	// the connection be reused.
	head := make([]byte, outbox.MaxAnswerBytes)
	n, _ := io.ReadFull(resp.Body, head)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes-int64(n)))
	_ = resp.Body.Close()
	r := attemptResult{status: resp.StatusCode, record: outbox.Attempt{Answer: outbox.AnswerText(head[:n])}}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.outcome = outcomeDelivered
		return r
	case resp.StatusCode == http.StatusGone:
		r.outcome = outcomeGone
	default:
		r.outcome = outcomeFailed
	}
	r.reason = "answered " + strconv.Itoa(resp.StatusCode)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		r.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), ts)
	}
	return r
}

// failure classifies an attempt that got no answer. The *url.Error is
// unwrapped: its text holds the URL, whose query may hold a credential.
func failure(err error) attemptResult {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var refused *refusedError
	var ne net.Error
	switch {
	case errors.As(err, &refused):
		return attemptResult{outcome: outcomeRefused, reason: refused.Error(), record: outbox.Attempt{Error: outbox.ErrorSSRFRefused}}
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return attemptResult{outcome: outcomeTimeout, reason: "no answer within --webhooks-timeout", record: outbox.Attempt{Error: outbox.ErrorTimeout}}
	}
	return attemptResult{outcome: outcomeError, reason: err.Error(), record: outbox.Attempt{Error: errorClass(err)}}
}

// errorClass classes a failure without an answer that is neither a
// timeout nor the guard's refusal, for the record of attempts.
func errorClass(err error) string {
	var certErr *tls.CertificateVerificationError
	var headerErr tls.RecordHeaderError
	var alert tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return outbox.ErrorRefused
	case errors.As(err, &certErr), errors.As(err, &headerErr), errors.As(err, &alert), errors.As(err, &unknownCA),
		errors.As(err, &hostname), errors.As(err, &invalid), strings.HasPrefix(err.Error(), "tls: "):
		return outbox.ErrorTLS
	}
	return outbox.ErrorConnection
}

// parseRetryAfter reads Retry-After, seconds (digits only, RFC 9110
// §10.2.3) or an HTTP date, at most MaxRetryWait in either form; 0 when it
// is absent, unreadable or past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil { // more digits than an int64 holds: longer still
			return MaxRetryWait
		}
		return time.Duration(min(secs, int64(MaxRetryWait/time.Second))) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return min(at.Sub(now), MaxRetryWait)
	}
	return 0
}

// statusClass is the "status_class" label: "2xx" to "5xx", or "none".
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "none"
	}
	return strconv.Itoa(status/100) + "xx"
}
