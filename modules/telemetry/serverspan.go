package telemetry

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// Middleware starts one server span per request, continuing the trace of an
// incoming traceparent header (and its baggage), named after the route
// template ("POST /plants") and carrying the HTTP semantic-convention
// attributes the conventions require of a server span. With tracing off it
// returns next itself.
//
// It is written on the OpenTelemetry API rather than with otelhttp: the
// contrib handler wraps the writer and the body once more, computes its own
// metrics even for a no-op meter and records a dozen attributes, each
// converted again at export; together that cost more than the rest of the
// create path (BenchmarkCreateChain, tracing=on). The recommended attributes
// left out are the client's address and user agent, which the access log
// does not keep either.
func (t *Tracing) Middleware(next http.Handler) http.Handler {
	if !t.Enabled() {
		return next
	}
	tracer := t.provider.Tracer("github.com/plantstore/plantstore/modules/telemetry")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := t.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		route := httpapi.RouteTemplate(r.Context())
		ctx, span := tracer.Start(ctx, spanName(r.Method, route),
			serverSpan,
			trace.WithAttributes(requestAttributes(r, route)...))
		w, r, ex := captureExchange(w, r.WithContext(ctx))
		defer func() {
			// Deferred, so that a request whose handler panicked (answered
			// 500 by the recover link below) still ends its span.
			if span.IsRecording() {
				endServerSpan(span, ex.status)
			}
			span.End()
		}()
		next.ServeHTTP(w, r)
	})
}

// serverSpan is built once: an option value costs an allocation.
var serverSpan = trace.WithSpanKind(trace.SpanKindServer)

// requestAttributes are the span's attributes known when it starts, so that
// a sampler can see them: method, scheme, path, protocol version and, when a
// route matched, its template.
func requestAttributes(r *http.Request, route string) []attribute.KeyValue {
	attrs := appendMethod(make([]attribute.KeyValue, 0, 7), r.Method)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs = append(attrs, semconv.URLScheme(scheme), semconv.URLPath(r.URL.Path), protocolVersion(r))
	if route != httpapi.UnmatchedRoute {
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	return attrs
}

// endServerSpan records the answer: its status code and, for a 5xx, an
// error status. A 4xx is the client's error, not the server span's.
func endServerSpan(span trace.Span, status int) {
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= http.StatusInternalServerError {
		span.SetAttributes(semconv.ErrorTypeKey.String(codeLabel(status)))
		span.SetStatus(codes.Error, "")
	}
}

// appendMethod adds http.request.method: one of the known methods, or
// "_OTHER" with the method sent kept in http.request.method_original.
func appendMethod(attrs []attribute.KeyValue, method string) []attribute.KeyValue {
	if methodLabel(method) == "OTHER" {
		return append(attrs, semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(method))
	}
	return append(attrs, semconv.HTTPRequestMethodKey.String(method))
}

var (
	protocol10 = semconv.NetworkProtocolVersion("1.0")
	protocol11 = semconv.NetworkProtocolVersion("1.1")
	protocol2  = semconv.NetworkProtocolVersion("2")
)

func protocolVersion(r *http.Request) attribute.KeyValue {
	switch {
	case r.ProtoMajor == 2:
		return protocol2
	case r.ProtoMinor == 0:
		return protocol10
	}
	return protocol11
}

// spanName follows the HTTP semantic conventions: "{method} {route}", or
// the method alone when no route matched, so the name is never a raw path.
func spanName(method, route string) string {
	method = methodLabel(method)
	if method == "OTHER" {
		method = "HTTP"
	}
	if route == httpapi.UnmatchedRoute {
		return method
	}
	return method + " " + route
}
