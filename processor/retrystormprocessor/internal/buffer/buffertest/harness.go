// Package buffertest drives the retry_storm processor, or the buffer inside it, in tests: an
// injected clock, a sink, the metrics it records, and the agent traces to feed it.
package buffertest // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// Clock is the injected clock; shard goroutines read it, tests advance it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Subject is what a Harness drives: the processor or its buffer, started.
type Subject interface {
	ConsumeTraces(ctx context.Context, td ptrace.Traces) error
	Shutdown(ctx context.Context) error
	// CatchUp waits until everything consumed so far is ingested and what is due at the
	// clock is decided.
	CatchUp(ctx context.Context) error
}

// Harness is a subject with an injected clock, a sink and its own telemetry.
type Harness struct {
	T testing.TB
	// Next is what the subject forwards to: Sink, or the test's own consumer.
	Next  consumer.Traces
	Sink  *consumertest.TracesSink
	Clock *Clock
	Tel   *componenttest.Telemetry

	subject Subject
	// shutDown is set when the test shut the subject down itself.
	shutDown bool
}

// NewHarness makes a harness's clock, telemetry and, when next is nil, its sink; Drive
// gives it its subject, made with Next, Clock and TelemetrySettings.
func NewHarness(t testing.TB, next consumer.Traces) *Harness {
	t.Helper()
	h := &Harness{T: t, Clock: NewClock(), Tel: componenttest.NewTelemetry(), Next: next}
	if next == nil {
		h.Sink = new(consumertest.TracesSink)
		h.Next = h.Sink
	}
	t.Cleanup(func() { require.NoError(t, h.Tel.Shutdown(context.Background())) })
	return h
}

// TelemetrySettings records into Tel and logs to logger (nil: no logs).
func (h *Harness) TelemetrySettings(logger *zap.Logger) component.TelemetrySettings {
	set := h.Tel.NewTelemetrySettings()
	if logger != nil {
		set.Logger = logger
	}
	return set
}

// Drive makes s, started, the harness's subject, shut down when the test ends unless the
// test shut it down itself.
func (h *Harness) Drive(s Subject) {
	h.subject = s
	h.T.Cleanup(func() {
		if !h.shutDown {
			require.NoError(h.T, s.Shutdown(context.Background()))
		}
	})
}

// Consume hands td to the subject.
func (h *Harness) Consume(td ptrace.Traces) {
	h.T.Helper()
	require.NoError(h.T, h.subject.ConsumeTraces(context.Background(), td))
}

// Advance waits until everything routed so far is ingested, moves the clock, and waits until
// every shard decided what became due. (Ingesting first matters: a shard's ticker may run
// before queued input, and spans that arrive after their trace's deadline are late.)
func (h *Harness) Advance(d time.Duration) {
	h.T.Helper()
	h.CatchUp()
	h.Clock.Advance(d)
	h.CatchUp()
}

// CatchUp waits until everything routed so far is ingested and what is due is decided.
func (h *Harness) CatchUp() {
	h.T.Helper()
	require.NoError(h.T, h.subject.CatchUp(context.Background()))
}

// Shutdown shuts the subject down within ctx.
func (h *Harness) Shutdown(ctx context.Context) error {
	h.shutDown = true
	return h.subject.Shutdown(ctx)
}

// Sum adds the data points of a counter (or gauge) whose attributes include want.
func (h *Harness) Sum(name string, want ...attribute.KeyValue) int64 {
	h.T.Helper()
	m, err := h.Tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var points []metricdata.DataPoint[int64]
	switch data := m.Data.(type) {
	case metricdata.Sum[int64]:
		points = data.DataPoints
	case metricdata.Gauge[int64]:
		points = data.DataPoints
	default:
		h.T.Fatalf("metric %s has unexpected type %T", name, m.Data)
	}
	var total int64
	for _, dp := range points {
		if hasAll(dp.Attributes, want) {
			total += dp.Value
		}
	}
	return total
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// Conservation asserts spans received = forwarded + dropped + still buffered.
func (h *Harness) Conservation() {
	h.T.Helper()
	received := h.Sum(metadata.MetricSpansReceived)
	forwarded := h.Sum(metadata.MetricSpansForwarded)
	dropped := h.Sum(metadata.MetricSpansDropped)
	buffered := h.Sum(metadata.MetricBufferedSpans)
	require.Equalf(h.T, received, forwarded+dropped+buffered,
		"received %d != forwarded %d + dropped %d + buffered %d", received, forwarded, dropped, buffered)
}
