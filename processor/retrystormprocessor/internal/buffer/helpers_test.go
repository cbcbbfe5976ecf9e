package retrystormprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// testClock is the injected clock; shard goroutines read it, tests advance it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a started processor with an injected clock, a sink and its own telemetry.
type harness struct {
	t     *testing.T
	p     *retryStormProcessor
	sink  *consumertest.TracesSink
	clock *testClock
	tel   *componenttest.Telemetry
	// shutDown is set when the test shut the processor down itself.
	shutDown bool
}

func newHarness(t *testing.T, cfg *Config, next consumer.Traces, opts ...option) *harness {
	t.Helper()
	return newLoggedHarness(t, cfg, next, nil, opts...)
}

// newLoggedHarness is newHarness with the processor logging to logger (nil: no logs).
func newLoggedHarness(t *testing.T, cfg *Config, next consumer.Traces, logger *zap.Logger, opts ...option) *harness {
	t.Helper()
	h := &harness{t: t, clock: newTestClock(), tel: componenttest.NewTelemetry()}
	if next == nil {
		h.sink = new(consumertest.TracesSink)
		next = h.sink
	}
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	if logger != nil {
		set.Logger = logger
		set.TelemetrySettings.Logger = logger
	}
	p, err := newRetryStormProcessor(set, cfg, next, append([]option{withClock(h.clock.Now)}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		if !h.shutDown {
			require.NoError(t, p.Shutdown(context.Background()))
		}
		require.NoError(t, h.tel.Shutdown(context.Background()))
	})
	h.p = p
	return h
}

func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.NumShards = 4
	return cfg
}

func (h *harness) consume(td ptrace.Traces) {
	h.t.Helper()
	require.NoError(h.t, h.p.ConsumeTraces(context.Background(), td))
}

// advance waits until everything routed so far is ingested, moves the clock, and waits until
// every shard decided what became due. (Ingesting first matters: a shard's ticker may run
// before queued input, and spans that arrive after their trace's deadline are late.)
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.settle()
	h.clock.Advance(d)
	h.settle()
}

func (h *harness) shutdown(ctx context.Context) error {
	h.shutDown = true
	return h.p.Shutdown(ctx)
}

func (h *harness) settle() {
	h.t.Helper()
	require.NoError(h.t, h.p.settle(context.Background()))
}

// sum adds the data points of a counter (or gauge) whose attributes include want.
func (h *harness) sum(name string, want ...attribute.KeyValue) int64 {
	h.t.Helper()
	m, err := h.tel.GetMetric(name)
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
		h.t.Fatalf("metric %s has unexpected type %T", name, m.Data)
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

// conservation asserts spans received = forwarded + dropped + still buffered.
func (h *harness) conservation() {
	h.t.Helper()
	received := h.sum(metadata.MetricSpansReceived)
	forwarded := h.sum(metadata.MetricSpansForwarded)
	dropped := h.sum(metadata.MetricSpansDropped)
	buffered := h.sum(metadata.MetricBufferedSpans)
	require.Equalf(h.t, received, forwarded+dropped+buffered,
		"received %d != forwarded %d + dropped %d + buffered %d", received, forwarded, dropped, buffered)
}

// traceID is a fixed, random-looking id (splitmix64 of n), so the consistent-sampling
// randomness of test traces is spread like real ids.
func traceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], splitmix(n))
	binary.BigEndian.PutUint64(id[8:], splitmix(n^0x5bd1e995))
	return id
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// spanBuilder writes the spans of one trace into one resource and scope.
type spanBuilder struct {
	td     ptrace.Traces
	spans  ptrace.SpanSlice
	trace  pcommon.TraceID
	nextID uint64
	base   time.Time
}

func newSpanBuilder(id pcommon.TraceID) *spanBuilder {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("agent-sdk")
	return &spanBuilder{td: td, spans: ss.Spans(), trace: id, base: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
}

// span appends a span lasting from startMS to endMS after the trace base.
func (b *spanBuilder) span(name string, parent pcommon.SpanID, startMS, endMS int64, attrs map[string]any) ptrace.Span {
	b.nextID++
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], b.nextID|uint64(b.trace[15])<<56)
	s := b.spans.AppendEmpty()
	s.SetName(name)
	s.SetTraceID(b.trace)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(b.base.Add(time.Duration(startMS) * time.Millisecond)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(b.base.Add(time.Duration(endMS) * time.Millisecond)))
	_ = s.Attributes().FromRaw(attrs)
	return s
}

func (b *spanBuilder) root() ptrace.Span {
	return b.span("invoke_agent checkout", pcommon.SpanID{}, 0, 10_000, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "checkout",
	})
}

// tool appends an OTel GenAI execute_tool attempt.
func (b *spanBuilder) tool(parent pcommon.SpanID, tool, callID string, startMS int64, failed bool) ptrace.Span {
	s := b.span("execute_tool "+tool, parent, startMS, startMS+200, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": callID,
		"gen_ai.tool.call.arguments": `{"order":"A-17","amount":42}`,
		"gen_ai.tool.call.result":    `{"ok":true}`,
	})
	if failed {
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage("upstream 503")
		s.Attributes().PutStr("gen_ai.tool.call.result", `{"error":"503"}`)
	}
	return s
}

// straggler starts a piece of trace id arriving late: its span ids follow the trace's own.
func straggler(id pcommon.TraceID) *spanBuilder {
	b := newSpanBuilder(id)
	b.nextID = 100
	return b
}

// lateAttempt is one more successful attempt of a trace's call, under its root, arriving late.
func lateAttempt(id pcommon.TraceID, tool, callID string, startMS int64) ptrace.Traces {
	b := straggler(id)
	b.tool(pcommon.SpanID{1}, tool, callID, startMS, false)
	return b.td
}

// cleanTrace is a root and one successful call per tool.
func cleanTrace(id pcommon.TraceID, tools ...string) ptrace.Traces {
	b := newSpanBuilder(id)
	root := b.root()
	for i, tool := range tools {
		b.tool(root.SpanID(), tool, fmt.Sprintf("call-%d", i), int64(100+i*300), false)
	}
	return b.td
}

// stormTrace is a root and one charge_card call tried three times (error, error, ok).
func stormTrace(id pcommon.TraceID) ptrace.Traces {
	return chargeCardTrace(id, true, true, false)
}

// chargeCardTrace is a root and one charge_card call, one attempt per entry of failed,
// 300 ms apart.
func chargeCardTrace(id pcommon.TraceID, failed ...bool) ptrace.Traces {
	b := newSpanBuilder(id)
	root := b.root()
	for i, f := range failed {
		b.tool(root.SpanID(), "charge_card", "call-1", int64(100+i*300), f)
	}
	return b.td
}

// withoutRoot removes the root span, so the trace waits for decision_wait.
func withoutRoot(td ptrace.Traces) ptrace.Traces {
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool {
		return s.ParentSpanID().IsEmpty()
	})
	return td
}

// sinkSpans groups the spans the sink received by trace id.
func sinkSpans(sink *consumertest.TracesSink) map[pcommon.TraceID][]ptrace.Span {
	out := map[pcommon.TraceID][]ptrace.Span{}
	for _, td := range sink.AllTraces() {
		for _, s := range tracespans.All(td) {
			out[s.TraceID()] = append(out[s.TraceID()], s)
		}
	}
	return out
}

// oneSpanPer splits td into one Traces per span, each with its resource and scope.
func oneSpanPer(td ptrace.Traces) []ptrace.Traces {
	var out []ptrace.Traces
	for _, s := range tracespans.All(td) {
		one := ptrace.NewTraces()
		rs := one.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "checkout-agent")
		s.CopyTo(rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty())
		out = append(out, one)
	}
	return out
}

func causeAttr(cause string) attribute.KeyValue { return attribute.String("cause", cause) }
