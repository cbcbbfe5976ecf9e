package retrystormprocessor

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

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decision"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
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
	b := newSpanBuilder(id)
	rootID := pcommon.SpanID{0xff, id[15]}
	for i := range models {
		b.span("chat gpt-x", rootID, int64(i*10), int64(i*10+5), map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.input.messages": fmt.Sprintf(`[{"role":"user","content":"step %d of a long run"}]`, i),
		})
	}
	models2 := b.td
	b = straggler(id)
	for i, f := range failed {
		b.tool(rootID, "charge_card", "call-1", int64(5000+i*300), f)
	}
	root := b.root()
	root.SetSpanID(rootID)
	return agentRun{id: id, models: models2, storm: b.td}
}

func lateSignalAttrs(cause, reason string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("cause", cause), attribute.String("reason", reason)}
}

// A trace past max_trace_bytes is decided at once, provisionally: its clean first part is
// dropped, and the rest, which brings the storm, is held, analysed, kept and recorded as a
// partial record, counted in late_signals and logged.
func TestTraceBytesDecisionIsProvisionalAndItsRestKeepsTheStorm(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	run := newAgentRun(traceID(7), 40, true, false)
	cfg.MaxTraceBytes = pieceSize(run.models) - 1
	core, logs := observer.New(zap.WarnLevel)
	h := newLoggedHarness(t, cfg, nil, zap.New(core))
	h.consume(run.models)
	h.settle()
	assert.EqualValues(t, 1, h.sum(metadata.MetricEarlyDecisions, causeAttr(causeTraceBytes)), "decided at once, past max_trace_bytes")
	assert.EqualValues(t, 40, h.sum(metadata.MetricSpansDropped, causeAttr(dropSampledOut)), "the clean first part is dropped")
	assert.Zero(t, h.sum(metadata.MetricBufferedSpans))

	h.clock.Advance(2500 * time.Millisecond)
	h.consume(run.storm)
	h.settle()
	assert.EqualValues(t, 3, h.sum(metadata.MetricBufferedSpans), "the rest is held, not dropped as late")
	assert.EqualValues(t, 3, h.sum(metadata.MetricLateSpans, attribute.String("decision", decisionProvisional)))
	h.advance(cfg.RootGrace)

	got := sinkSpans(h.sink)[run.id]
	require.Len(t, got, 3, "the rest of the trace is kept")
	records := allSummaries(t, got)
	require.Len(t, records, 1)
	assert.True(t, records[0].Storm)
	assert.True(t, records[0].Partial, "the record says it covers part of the trace")
	assert.Equal(t, 2, records[0].Attempts)
	assert.EqualValues(t, 1, h.sum(metadata.MetricLateSignals, lateSignalAttrs(causeTraceBytes, "storm")...))
	require.Equal(t, 1, logs.Len(), "one log line per late signal")
	fields := logs.All()[0].ContextMap()
	assert.Equal(t, run.id.String(), fields["trace.id"])
	assert.Equal(t, "storm", fields["late_signal.reason"])
	assert.Equal(t, causeTraceBytes, fields["late_signal.cause"])
	h.conservation()
}

// Memory pressure decides a root-less fragment early under a flood of fragments; the
// storm-bearing rest is not dropped as a late span of a dropped trace.
func TestMemoryPressureDecisionIsProvisional(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	run := newAgentRun(traceID(8), 10, true, false)
	clean := pieceSize(cleanTrace(traceID(0), "lookup", "fetch", "summarize"))
	cfg.MaxBufferedBytes = pieceSize(run.models) + 4*clean
	h := newHarness(t, cfg, nil)
	h.consume(run.models)
	h.settle()
	// Another tenant floods fragments (complete traces would be decided first).
	for i := range 20 {
		h.consume(withoutRoot(cleanTrace(traceID(uint64(100+i)), "lookup", "fetch", "summarize")))
		h.settle()
	}
	require.Nil(t, h.p.shards[0].traces[run.id], "the fragment was decided under pressure")
	for i := range 20 { // and the flood goes on, so the rest arrives under pressure too
		h.consume(withoutRoot(cleanTrace(traceID(uint64(200+i)), "lookup", "fetch", "summarize")))
	}
	h.consume(run.storm)
	h.settle()
	h.advance(30 * time.Second)
	got := sinkSpans(h.sink)[run.id]
	require.Len(t, got, 3, "the storm-bearing rest is kept")
	records := allSummaries(t, got)
	require.Len(t, records, 1)
	assert.True(t, records[0].Storm)
	assert.True(t, records[0].Partial)
	assert.EqualValues(t, 1, h.sum(metadata.MetricLateSignals, lateSignalAttrs(causeMemoryPressure, "storm")...))
	h.conservation()
}

// The rest of a trace kept provisionally is kept whatever it shows, and analysed: a storm in
// it gets its record, which it would not as a late span of a kept trace.
func TestRestOfAProvisionallyKeptTraceIsKeptAndAnalysed(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 100
	run := newAgentRun(traceID(9), 40, true, true, false)
	cfg.MaxTraceBytes = pieceSize(run.models) - 1
	h := newHarness(t, cfg, nil)
	h.consume(run.models)
	h.settle()
	require.Len(t, sinkSpans(h.sink)[run.id], 40, "kept clean at 100% and forwarded at once")
	h.consume(run.storm)
	h.advance(cfg.RootGrace)
	got := sinkSpans(h.sink)[run.id]
	require.Len(t, got, 44)
	records := allSummaries(t, got)
	require.Len(t, records, 1)
	assert.True(t, records[0].Partial)
	assert.Equal(t, 3, records[0].Attempts)
	assert.EqualValues(t, 1, h.sum(metadata.MetricLateSignals, lateSignalAttrs(causeTraceBytes, "storm")...))
	for _, s := range got[40:] {
		_, raw := s.Attributes().Get("gen_ai.tool.call.arguments")
		assert.False(t, raw, "the rest is redacted as a kept trace")
	}
	h.conservation()
}

// A clean rest of a provisionally dropped trace is dropped provisionally again, so a storm in
// a later piece is still caught; a trace decided for good keeps dropping late spans.
func TestCleanRestStaysProvisionalAndFinalDecisionsStayFinal(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	run := newAgentRun(traceID(10), 40, true, false)
	cfg.MaxTraceBytes = pieceSize(run.models) - 1
	h := newHarness(t, cfg, nil)
	h.consume(run.models)
	h.settle()
	more := newAgentRun(run.id, 3) // three more clean model spans
	h.consume(more.models)
	h.advance(cfg.DecisionWait)
	assert.EqualValues(t, 43, h.sum(metadata.MetricSpansDropped, causeAttr(dropSampledOut)))
	assert.Zero(t, h.sum(metadata.MetricLateSignals))
	h.consume(run.storm)
	h.advance(cfg.RootGrace)
	require.Len(t, sinkSpans(h.sink)[run.id], 3, "the storm of the third piece is kept")

	final := traceID(11)
	h.consume(cleanTrace(final, "lookup"))
	h.advance(cfg.RootGrace)
	h.consume(lateAttempt(final, "lookup", "call-9", 900))
	h.settle()
	assert.EqualValues(t, 1, h.sum(metadata.MetricSpansDropped, causeAttr(dropLate)), "a deadline decision is final")
	h.conservation()
}

// Under memory pressure complete traces (root arrived) are decided before fragments waiting
// for their root, older though the fragments are.
func TestMemoryPressureDecidesCompleteTracesBeforeFragments(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	fragment := traceID(1)
	clean := pieceSize(cleanTrace(traceID(0), "lookup", "fetch", "summarize"))
	frag := withoutRoot(cleanTrace(fragment, "lookup", "fetch", "summarize"))
	cfg.MaxBufferedBytes = pieceSize(frag) + 3*clean + clean/2
	h := newHarness(t, cfg, nil)
	h.consume(frag)
	h.settle()
	for i := range 10 {
		h.consume(cleanTrace(traceID(uint64(100+i)), "lookup", "fetch", "summarize"))
		h.settle()
	}
	assert.Positive(t, h.sum(metadata.MetricEarlyDecisions, causeAttr(causeMemoryPressure)))
	require.NotNil(t, h.p.shards[0].traces[fragment], "the older fragment waits while complete traces can be decided")
	h.conservation()
}

func TestLogLimiterLetsOneLineThroughPerInterval(t *testing.T) {
	l := &logLimiter{every: time.Second}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ok, suppressed := l.allow(at)
	assert.True(t, ok)
	assert.Zero(t, suppressed)
	for i := range 3 {
		ok, _ = l.allow(at.Add(time.Duration(i) * 300 * time.Millisecond))
		assert.False(t, ok, "held back within the interval")
	}
	ok, suppressed = l.allow(at.Add(time.Second))
	assert.True(t, ok)
	assert.EqualValues(t, 3, suppressed, "the next line reports what was held back")
}

func TestReasonIndexRoundTrips(t *testing.T) {
	for _, r := range append(decision.SignalReasons[:], decision.ReasonClean) {
		assert.Equal(t, r, reasonOf(reasonIndex(r)))
	}
	assert.LessOrEqual(t, unsafe.Sizeof(keptDecision{}), uintptr(24), "a kept decision stays three words")
}
