package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newExporter builds the OTLP exporter; retries stop within --timeout so a run that cannot
// reach its collector ends instead of hanging.
func newExporter(ctx context.Context, o options) (sdktrace.SpanExporter, error) {
	if o.protocol == protocolHTTP {
		exp, err := otlptracehttp.New(ctx, httpOptions(o)...)
		if err != nil {
			return nil, fmt.Errorf("create OTLP/HTTP exporter for %s: %w", o.endpoint, err)
		}
		return exp, nil
	}
	exp, err := otlptracegrpc.New(ctx, grpcOptions(o)...)
	if err != nil {
		return nil, fmt.Errorf("create OTLP/gRPC exporter for %s: %w", o.endpoint, err)
	}
	return exp, nil
}

func grpcOptions(o options) []otlptracegrpc.Option {
	opts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(o.timeout),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: retryInterval,
			MaxInterval: time.Second, MaxElapsedTime: o.timeout})}
	if strings.Contains(o.endpoint, "://") {
		opts = append(opts, otlptracegrpc.WithEndpointURL(o.endpoint))
	} else {
		opts = append(opts, otlptracegrpc.WithEndpoint(o.endpoint))
	}
	if o.insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	return opts
}

func httpOptions(o options) []otlptracehttp.Option {
	opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(o.timeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: retryInterval,
			MaxInterval: time.Second, MaxElapsedTime: o.timeout})}
	if strings.Contains(o.endpoint, "://") {
		opts = append(opts, otlptracehttp.WithEndpointURL(o.endpoint))
	} else {
		opts = append(opts, otlptracehttp.WithEndpoint(o.endpoint))
	}
	if o.insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return opts
}

const retryInterval = 100 * time.Millisecond

// countingExporter remembers what reached the collector: the batch span processor only
// hands export errors to the global error handler, and the run's exit code needs them.
type countingExporter struct {
	sdktrace.SpanExporter
	exported atomic.Int64
	failed   atomic.Int64
	mu       sync.Mutex
	firstErr error
}

func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := c.SpanExporter.ExportSpans(ctx, spans); err != nil {
		c.failed.Add(int64(len(spans)))
		c.mu.Lock()
		if c.firstErr == nil {
			c.firstErr = err
		}
		c.mu.Unlock()
		return err
	}
	c.exported.Add(int64(len(spans)))
	return nil
}

// err returns the first export error, if any.
func (c *countingExporter) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.firstErr
}
