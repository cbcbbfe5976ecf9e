package buffer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

// Settling: a trace is triaged when its root arrives (triageAtRoot) and decided root_grace
// later from what that triage kept.

// TestASettledTraceIsDecidedWithoutReadingItsSpansAgain: the decision of a trace settled
// clean on its root's arrival uses that triage. The test changes a held span behind the
// processor's back (never done outside a test: the processor owns what it was given) to
// show the decision did not read it, and that the counts of the drop are the triage's.
func TestASettledTraceIsDecidedWithoutReadingItsSpansAgain(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	td := buffertest.CleanTrace(buffertest.TraceID(1), "lookup", "quote")
	h.Consume(td)
	h.CatchUp()
	for _, span := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
		span.Status().SetCode(ptrace.StatusCodeError)
	}
	h.Advance(2 * time.Second)
	assert.Empty(t, buffertest.SinkSpans(h.Sink), "dropped on the triage made when the root arrived")
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("decision", "dropped")))
	assert.EqualValues(t, 2, h.Sum(metadata.MetricToolAttempts))
	assert.EqualValues(t, 2, h.Sum(metadata.MetricCalls))
	h.Conservation()
}

// TestSpansAfterTheRootVoidItsSettling: spans arriving within root_grace after the root are
// part of the decision. A clean-looking trace whose second attempt (a storm) or error span
// comes after its root is kept whole, not dropped on the triage of its first part.
func TestSpansAfterTheRootVoidItsSettling(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)

	retried, failing, clean := buffertest.TraceID(1), buffertest.TraceID(2), buffertest.TraceID(3)
	h.Consume(buffertest.ChargeCardTrace(retried, false))
	h.Consume(buffertest.CleanTrace(failing, "lookup"))
	h.Consume(buffertest.CleanTrace(clean, "lookup"))
	h.Advance(time.Second)

	h.Consume(buffertest.LateAttempt(retried, "charge_card", "call-1", 900))
	late := buffertest.Straggler(failing)
	s := late.Span("GET /inventory", pcommon.SpanID{1}, 50, 90, map[string]any{"http.request.method": "GET"})
	s.Status().SetCode(ptrace.StatusCodeError)
	h.Consume(late.Traces)

	h.Advance(time.Second)
	got := buffertest.SinkSpans(h.Sink)
	assert.Len(t, got[retried], 3, "the second attempt makes a storm")
	assert.Len(t, got[failing], 3, "the error span arrived after the root")
	assert.NotContains(t, got, clean)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("reason", "storm")))
	h.Conservation()
}

// TestASettledTraceStillFeedsTheStaleCacheCheck: a clean trace settled on its root's arrival
// and dropped at its deadline is still an earlier trace for the stale-cache check: a later
// answer that repeats its result right after a failure, far faster than it, is a suspect.
func TestASettledTraceStillFeedsTheStaleCacheCheck(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	h.Consume(buffertest.ChargeCardTrace(buffertest.TraceID(1), false))
	h.Advance(2 * time.Second)
	require.Empty(t, buffertest.SinkSpans(h.Sink))

	b := buffertest.NewSpanBuilder(buffertest.TraceID(2))
	root := b.Span("invoke_agent checkout", pcommon.SpanID{}, 120_000, 130_000, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "checkout",
	})
	b.Tool(root.SpanID(), "charge_card", "call-1", 120_100, true)
	fast := b.Tool(root.SpanID(), "charge_card", "call-1", 120_400, false)
	fast.SetEndTimestamp(fast.StartTimestamp() + pcommon.Timestamp(2*time.Millisecond))
	h.Consume(b.Traces)
	h.Advance(2 * time.Second)
	require.Contains(t, buffertest.SinkSpans(h.Sink), buffertest.TraceID(2))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricFindings, attribute.String("kind", "stale_cache_suspect")))
	h.Conservation()
}

// Clean traces settled on their root's arrival are shed first under memory pressure, from
// their settled verdict; a storm still waiting for its root is not decided in their place.
func TestMemoryPressureShedsSettledTracesFirst(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	storm := pieceSize(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(0))))
	clean := pieceSize(buffertest.CleanTrace(buffertest.TraceID(0), "lookup", "fetch"))
	cfg.MaxBufferedBytes = 2*storm + 3*clean
	h := newHarness(t, cfg, nil)
	h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(1000))))
	for i := range 40 {
		h.Consume(buffertest.CleanTrace(buffertest.TraceID(uint64(i)), "lookup", "fetch")) // whole, root included: settled
		h.CatchUp()
		require.LessOrEqual(t, h.Sum(metadata.MetricBufferedBytes), cfg.MaxBufferedBytes)
	}
	assert.NotContains(t, buffertest.SinkSpans(h.Sink), buffertest.TraceID(1000), "the storm waits while settled clean traces can be shed")
	assert.Positive(t, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseMemoryPressure)))
	h.Advance(30 * time.Second)
	assert.Len(t, buffertest.SinkSpans(h.Sink)[buffertest.TraceID(1000)], 3)
	assert.EqualValues(t, 40*2+3, h.Sum(metadata.MetricToolAttempts), "each trace counted once")
	h.Conservation()
}

// A settled trace a per-tool rate keeps is analysed; its counts are recorded once.
func TestASettledTraceSamplingKeepsIsCountedOnce(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	cfg.Sampling.Tools = map[string]sample.ToolConfig{"charge_card": {CleanPercent: 100}}
	h := newHarness(t, cfg, nil)
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(1), "charge_card", "lookup"))
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(2), "lookup"))
	h.Advance(2 * time.Second)
	got := buffertest.SinkSpans(h.Sink)
	assert.Len(t, got[buffertest.TraceID(1)], 3)
	assert.NotContains(t, got, buffertest.TraceID(2))
	assert.EqualValues(t, 3, h.Sum(metadata.MetricToolAttempts))
	assert.EqualValues(t, 3, h.Sum(metadata.MetricCalls))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("decision", "kept"), attribute.String("reason", "clean")))
	h.Conservation()
}

// A settled trace still buffered at shutdown is decided from its settled verdict.
func TestShutdownDecidesASettledTrace(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(1), "lookup"))
	h.CatchUp()
	require.NoError(t, h.Shutdown(t.Context()))
	assert.Empty(t, buffertest.SinkSpans(h.Sink))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseShutdown)))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricToolAttempts))
	h.Conservation()
}
