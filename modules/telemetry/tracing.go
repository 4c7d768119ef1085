package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/buildinfo"
)

// Tracing is the service's OpenTelemetry tracer provider and the API
// chain's server-span middleware. It is configured only by the standard
// OTEL_* environment variables (OTEL_EXPORTER_OTLP_*, OTEL_TRACES_SAMPLER,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME, OTEL_BSP_*), read by the
// OpenTelemetry SDK and exporters themselves, and it is off unless they ask
// for an exporter: see tracingEnabled.
type Tracing struct {
	provider   trace.TracerProvider
	sdk        *sdktrace.TracerProvider // nil when tracing is off
	propagator propagation.TextMapPropagator
}

// tracingEnabled reports whether the environment asks for traces:
// OTEL_TRACES_EXPORTER names an exporter other than "none", or, when it is
// unset, an OTLP endpoint is set. OTEL_SDK_DISABLED=true keeps tracing off
// whatever else is set.
func tracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exporter != "" {
		return exporter != "none"
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// buildTracing builds the tracer provider the environment asks for. Off, it
// is OpenTelemetry's no-op provider and the middleware is the identity, so
// tracing costs nothing. On, spans go through a batch processor to the OTLP
// exporter. A value it cannot honour is an error, so that the program stops
// at start rather than run without the traces it was asked for.
func buildTracing(ctx context.Context, log *zap.Logger) (*Tracing, error) {
	t := &Tracing{
		provider:   tracenoop.NewTracerProvider(),
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	if !tracingEnabled(os.Getenv) {
		return t, nil
	}
	// Export failures (a collector that is down, say) are reported through
	// OpenTelemetry's process-wide handler; send them to our log.
	otelLog := log.Named("otel")
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { otelLog.Warn("opentelemetry error", zap.Error(err)) }))

	exporter, err := newExporter(ctx, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("plantstore"), semconv.ServiceVersion(buildinfo.Get().Version)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithFromEnv(), // last, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		_ = exporter.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
	// (default: parentbased_always_on), read by the SDK.
	t.use(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)))
	log.Info("tracing enabled", zap.String("service", serviceName(res)))
	return t, nil
}

// use turns tracing on with provider.
func (t *Tracing) use(provider *sdktrace.TracerProvider) {
	t.sdk, t.provider = provider, provider
}

// newExporter returns the OTLP span exporter over the protocol that
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL names:
// http/protobuf, the specification's default and the one this build has.
// The exporter reads the rest of its OTEL_EXPORTER_OTLP_* settings
// (endpoint, headers, timeout, compression, certificates) itself. OTLP over
// HTTP is the one exporter built in: the gRPC exporter's client code costs
// a quarter MB of a 25 MB image budget, and every OTLP collector takes HTTP
// (port 4318); the contrib autoexport package would add console, metric
// and log exporters nobody here uses.
func newExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	if name := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); name != "" && name != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER %q: want otlp or none", name)
	}
	protocol := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch protocol {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return nil, errors.New("OTLP protocol grpc is not built in: use http/protobuf, the default (collectors take it on port 4318)")
	}
	return nil, fmt.Errorf("OTLP protocol %q: want http/protobuf", protocol)
}

func serviceName(res *resource.Resource) string {
	v, _ := res.Set().Value(semconv.ServiceNameKey)
	return v.AsString()
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t.sdk != nil }

// TracerProvider is the provider for the service's own spans (the store's
// child spans, a database driver's query spans): no-op when tracing is off.
func (t *Tracing) TracerProvider() trace.TracerProvider { return t.provider }

// Shutdown exports the spans still queued and stops the exporter. Run it
// after the listeners have drained, so that the last requests' spans go out.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush on shutdown: %w", err)
	}
	return nil
}
