package buffer

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// agentRun is one agent run sent as an SDK batch exporter sends a long one: first the model
// spans (clean-looking, no root), then the tool attempts and, last, the root.
type agentRun struct {
	id     pcommon.TraceID
	models ptrace.Traces
	storm  ptrace.Traces
}

// newAgentRun builds a run with models model spans carrying content and a charge_card call
// tried per entry of failed; its root comes with the attempts.
func newAgentRun(id pcommon.TraceID, models int, failed ...bool) agentRun {
	b := buffertest.NewSpanBuilder(id)
	rootID := pcommon.SpanID{0xff, id[15]}
	for i := range models {
		b.Span("chat gpt-x", rootID, int64(i*10), int64(i*10+5), map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.input.messages": fmt.Sprintf(`[{"role":"user","content":"step %d of a long run"}]`, i),
		})
	}
	models2 := b.Traces
	b = buffertest.Straggler(id)
	for i, f := range failed {
		b.Tool(rootID, "charge_card", "call-1", int64(5000+i*300), f)
	}
	root := b.Root()
	root.SetSpanID(rootID)
	return agentRun{id: id, models: models2, storm: b.Traces}
}

func lateSignalAttrs(cause Cause, reason string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("cause", cause.String()), attribute.String("reason", reason)}
}

// oneShard is the configuration these tests start from: one shard, so every trace presses
// on the same share, and clean traces kept at clean percent.
func oneShard(clean float64) *testSetup {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = clean
	return cfg
}

// pastTraceBytes starts a harness on oneShard(clean) whose max_trace_bytes run's model
// spans exceed, logging to logger (nil: no logs), and sends them: they are decided at once,
// provisionally.
func pastTraceBytes(t *testing.T, clean float64, run agentRun, logger *zap.Logger) (*harness, *testSetup) {
	t.Helper()
	cfg := oneShard(clean)
	cfg.MaxTraceBytes = pieceSize(run.models) - 1
	h := newLoggedHarness(t, cfg, nil, logger)
	h.Consume(run.models)
	h.CatchUp()
	return h, cfg
}

// threeCalls is a clean trace of three calls, the traffic that presses on the buffer.
func threeCalls(id pcommon.TraceID) ptrace.Traces {
	return buffertest.CleanTrace(id, "lookup", "fetch", "summarize")
}

// A trace past max_trace_bytes is decided at once, provisionally: its clean first part is
// dropped, and the rest, which brings the storm, is held, analysed, kept and recorded as a
// partial record, counted in late_signals and logged.
func TestTraceBytesDecisionIsProvisionalAndItsRestKeepsTheStorm(t *testing.T) {
	run := newAgentRun(buffertest.TraceID(7), 40, true, false)
	core, logs := observer.New(zap.WarnLevel)
	h, cfg := pastTraceBytes(t, 0, run, zap.New(core))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseTraceBytes)), "decided at once, past max_trace_bytes")
	assert.EqualValues(t, 40, h.Sum(metadata.MetricSpansDropped, causeAttr(DropSampledOut)), "the clean first part is dropped")
	assert.Zero(t, h.Sum(metadata.MetricBufferedSpans))

	h.Clock.Advance(2500 * time.Millisecond)
	h.Consume(run.storm)
	h.CatchUp()
	assert.EqualValues(t, 3, h.Sum(metadata.MetricBufferedSpans), "the rest is held, not dropped as late")
	assert.EqualValues(t, 3, h.Sum(metadata.MetricLateSpans, attribute.String("decision", metadata.AttributeLateDecisionProvisional)))
	h.Advance(cfg.RootGrace)

	got := buffertest.SinkSpans(h.Sink)[run.id]
	require.Len(t, got, 3, "the rest of the trace is kept")
	records := allSummaries(t, got)
	require.Len(t, records, 1)
	assert.True(t, records[0].Storm)
	assert.True(t, records[0].Partial, "the record says it covers part of the trace")
	assert.Equal(t, 2, records[0].Attempts)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSignals, lateSignalAttrs(CauseTraceBytes, "storm")...))
	require.Equal(t, 1, logs.Len(), "one log line per late signal")
	fields := logs.All()[0].ContextMap()
	assert.Equal(t, run.id.String(), fields["trace.id"])
	assert.Equal(t, "storm", fields["late_signal.reason"])
	assert.Equal(t, CauseTraceBytes.String(), fields["late_signal.cause"])
	h.Conservation()
}

// Memory pressure decides a root-less fragment early under a flood of fragments; the
// storm-bearing rest is not dropped as a late span of a dropped trace.
func TestMemoryPressureDecisionIsProvisional(t *testing.T) {
	cfg := oneShard(0)
	run := newAgentRun(buffertest.TraceID(8), 10, true, false)
	cfg.MaxBufferedBytes = pieceSize(run.models) + 4*pieceSize(threeCalls(buffertest.TraceID(0)))
	h := newHarness(t, cfg, nil)
	h.Consume(run.models)
	h.CatchUp()
	// Another tenant floods fragments (complete traces would be decided first).
	for i := range 20 {
		h.Consume(buffertest.WithoutRoot(threeCalls(buffertest.TraceID(uint64(100 + i)))))
		h.CatchUp()
	}
	require.Nil(t, h.buffer.shards[0].traces[run.id], "the fragment was decided under pressure")
	for i := range 20 { // and the flood goes on, so the rest arrives under pressure too
		h.Consume(buffertest.WithoutRoot(threeCalls(buffertest.TraceID(uint64(200 + i)))))
	}
	h.Consume(run.storm)
	h.CatchUp()
	h.Advance(30 * time.Second)
	got := buffertest.SinkSpans(h.Sink)[run.id]
	require.Len(t, got, 3, "the storm-bearing rest is kept")
	records := allSummaries(t, got)
	require.Len(t, records, 1)
	assert.True(t, records[0].Storm)
	assert.True(t, records[0].Partial)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSignals, lateSignalAttrs(CauseMemoryPressure, "storm")...))
	h.Conservation()
}

// The rest of a trace kept provisionally is kept whatever it shows, and analysed: a storm in
// it gets its record, which it would not as a late span of a kept trace.
func TestRestOfAProvisionallyKeptTraceIsKeptAndAnalysed(t *testing.T) {
	run := newAgentRun(buffertest.TraceID(9), 40, true, true, false)
	h, cfg := pastTraceBytes(t, 100, run, nil)
	require.Len(t, buffertest.SinkSpans(h.Sink)[run.id], 40, "kept clean at 100% and forwarded at once")
	h.Consume(run.storm)
	h.Advance(cfg.RootGrace)
	got := buffertest.SinkSpans(h.Sink)[run.id]
	require.Len(t, got, 44)
	records := allSummaries(t, got)
	require.Len(t, records, 1)
	assert.True(t, records[0].Partial)
	assert.Equal(t, 3, records[0].Attempts)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSignals, lateSignalAttrs(CauseTraceBytes, "storm")...))
	for _, s := range got[40:] {
		_, raw := s.Attributes().Get("gen_ai.tool.call.arguments")
		assert.False(t, raw, "the rest is redacted as a kept trace")
	}
	h.Conservation()
}

// A clean rest of a provisionally dropped trace is dropped provisionally again, so a storm in
// a later piece is still caught; a trace decided for good keeps dropping late spans.
func TestCleanRestStaysProvisionalAndFinalDecisionsStayFinal(t *testing.T) {
	run := newAgentRun(buffertest.TraceID(10), 40, true, false)
	h, cfg := pastTraceBytes(t, 0, run, nil)
	more := newAgentRun(run.id, 3) // three more clean model spans
	h.Consume(more.models)
	h.Advance(cfg.DecisionWait)
	assert.EqualValues(t, 43, h.Sum(metadata.MetricSpansDropped, causeAttr(DropSampledOut)))
	assert.Zero(t, h.Sum(metadata.MetricLateSignals))
	h.Consume(run.storm)
	h.Advance(cfg.RootGrace)
	require.Len(t, buffertest.SinkSpans(h.Sink)[run.id], 3, "the storm of the third piece is kept")

	final := buffertest.TraceID(11)
	h.Consume(buffertest.CleanTrace(final, "lookup"))
	h.Advance(cfg.RootGrace)
	h.Consume(buffertest.LateAttempt(final, "lookup", "call-9", 900))
	h.CatchUp()
	assert.EqualValues(t, 1, h.Sum(metadata.MetricSpansDropped, causeAttr(DropLate)), "a deadline decision is final")
	h.Conservation()
}

// Under memory pressure complete traces (root arrived) are decided before fragments waiting
// for their root, older though the fragments are.
func TestMemoryPressureDecidesCompleteTracesBeforeFragments(t *testing.T) {
	cfg := oneShard(0)
	fragment := buffertest.TraceID(1)
	clean := pieceSize(threeCalls(buffertest.TraceID(0)))
	frag := buffertest.WithoutRoot(threeCalls(fragment))
	cfg.MaxBufferedBytes = pieceSize(frag) + 3*clean + clean/2
	h := newHarness(t, cfg, nil)
	h.Consume(frag)
	h.CatchUp()
	for i := range 10 {
		h.Consume(threeCalls(buffertest.TraceID(uint64(100 + i))))
		h.CatchUp()
	}
	assert.Positive(t, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseMemoryPressure)))
	require.NotNil(t, h.buffer.shards[0].traces[fragment], "the older fragment waits while complete traces can be decided")
	h.Conservation()
}

func TestKeptDecisionStaysThreeWords(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(keptDecision[verdict.Kept]{}), uintptr(24), "a kept decision stays three words")
	h := newHarness(t, oneShard(5), nil, WithSynchronous())
	sh := h.buffer.shards[0]
	kd := sh.keptDecision(verdict.Kept{}, markTraceBytes)
	assert.Equal(t, markTraceBytes, sh.provisional(&kd))
	assert.False(t, sh.valuesForgotten(&kd))
}
