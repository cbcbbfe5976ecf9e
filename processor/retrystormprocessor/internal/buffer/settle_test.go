package retrystormprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// Settling: a trace is triaged when its root arrives (shard.settle) and decided root_grace
// later from what that triage kept.

// TestASettledTraceIsDecidedWithoutReadingItsSpansAgain: the decision of a trace settled
// clean on its root's arrival uses that triage. The test changes a held span behind the
// processor's back (never done outside a test: the processor owns what it was given) to
// show the decision did not read it, and that the counts of the drop are the triage's.
func TestASettledTraceIsDecidedWithoutReadingItsSpansAgain(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	td := cleanTrace(traceID(1), "lookup", "quote")
	h.consume(td)
	h.settle()
	for _, span := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
		span.Status().SetCode(ptrace.StatusCodeError)
	}
	h.advance(2 * time.Second)
	assert.Empty(t, sinkSpans(h.sink), "dropped on the triage made when the root arrived")
	assert.EqualValues(t, 1, h.sum(metadata.MetricTraces, attribute.String("decision", "dropped")))
	assert.EqualValues(t, 2, h.sum(metadata.MetricToolAttempts))
	assert.EqualValues(t, 2, h.sum(metadata.MetricCalls))
	h.conservation()
}

// TestSpansAfterTheRootVoidItsSettling: spans arriving within root_grace after the root are
// part of the decision. A clean-looking trace whose second attempt (a storm) or error span
// comes after its root is kept whole, not dropped on the triage of its first part.
func TestSpansAfterTheRootVoidItsSettling(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)

	retried, failing, clean := traceID(1), traceID(2), traceID(3)
	h.consume(chargeCardTrace(retried, false))
	h.consume(cleanTrace(failing, "lookup"))
	h.consume(cleanTrace(clean, "lookup"))
	h.advance(time.Second)

	h.consume(lateAttempt(retried, "charge_card", "call-1", 900))
	late := straggler(failing)
	s := late.span("GET /inventory", pcommon.SpanID{1}, 50, 90, map[string]any{"http.request.method": "GET"})
	s.Status().SetCode(ptrace.StatusCodeError)
	h.consume(late.td)

	h.advance(time.Second)
	got := sinkSpans(h.sink)
	assert.Len(t, got[retried], 3, "the second attempt makes a storm")
	assert.Len(t, got[failing], 3, "the error span arrived after the root")
	assert.NotContains(t, got, clean)
	assert.EqualValues(t, 1, h.sum(metadata.MetricTraces, attribute.String("reason", "storm")))
	h.conservation()
}

// TestASettledTraceStillFeedsTheStaleCacheCheck: a clean trace settled on its root's arrival
// and dropped at its deadline is still an earlier trace for the stale-cache check: a later
// answer that repeats its result right after a failure, far faster than it, is a suspect.
func TestASettledTraceStillFeedsTheStaleCacheCheck(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	h.consume(chargeCardTrace(traceID(1), false))
	h.advance(2 * time.Second)
	require.Empty(t, sinkSpans(h.sink))

	b := newSpanBuilder(traceID(2))
	root := b.span("invoke_agent checkout", pcommon.SpanID{}, 120_000, 130_000, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "checkout",
	})
	b.tool(root.SpanID(), "charge_card", "call-1", 120_100, true)
	fast := b.tool(root.SpanID(), "charge_card", "call-1", 120_400, false)
	fast.SetEndTimestamp(fast.StartTimestamp() + pcommon.Timestamp(2*time.Millisecond))
	h.consume(b.td)
	h.advance(2 * time.Second)
	require.Contains(t, sinkSpans(h.sink), traceID(2))
	assert.EqualValues(t, 1, h.sum(metadata.MetricFindings, attribute.String("kind", "stale_cache_suspect")))
	h.conservation()
}

// Clean traces settled on their root's arrival are shed first under memory pressure, from
// their settled verdict; a storm still waiting for its root is not decided in their place.
func TestMemoryPressureShedsSettledTracesFirst(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	storm := pieceSize(withoutRoot(stormTrace(traceID(0))))
	clean := pieceSize(cleanTrace(traceID(0), "lookup", "fetch"))
	cfg.MaxBufferedBytes = 2*storm + 3*clean
	h := newHarness(t, cfg, nil)
	h.consume(withoutRoot(stormTrace(traceID(1000))))
	for i := range 40 {
		h.consume(cleanTrace(traceID(uint64(i)), "lookup", "fetch")) // whole, root included: settled
		h.settle()
		require.LessOrEqual(t, h.sum(metadata.MetricBufferedBytes), cfg.MaxBufferedBytes)
	}
	assert.NotContains(t, sinkSpans(h.sink), traceID(1000), "the storm waits while settled clean traces can be shed")
	assert.Positive(t, h.sum(metadata.MetricEarlyDecisions, causeAttr(causeMemoryPressure)))
	h.advance(30 * time.Second)
	assert.Len(t, sinkSpans(h.sink)[traceID(1000)], 3)
	assert.EqualValues(t, 40*2+3, h.sum(metadata.MetricToolAttempts), "each trace counted once")
	h.conservation()
}

// A settled trace a per-tool rate keeps is analysed; its counts are recorded once.
func TestASettledTraceSamplingKeepsIsCountedOnce(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	cfg.Sampling.Tools = map[string]ToolSamplingConfig{"charge_card": {CleanPercent: 100}}
	h := newHarness(t, cfg, nil)
	h.consume(cleanTrace(traceID(1), "charge_card", "lookup"))
	h.consume(cleanTrace(traceID(2), "lookup"))
	h.advance(2 * time.Second)
	got := sinkSpans(h.sink)
	assert.Len(t, got[traceID(1)], 3)
	assert.NotContains(t, got, traceID(2))
	assert.EqualValues(t, 3, h.sum(metadata.MetricToolAttempts))
	assert.EqualValues(t, 3, h.sum(metadata.MetricCalls))
	assert.EqualValues(t, 1, h.sum(metadata.MetricTraces, attribute.String("decision", "kept"), attribute.String("reason", "clean")))
	h.conservation()
}

// A settled trace still buffered at shutdown is decided from its settled verdict.
func TestShutdownDecidesASettledTrace(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	h.consume(cleanTrace(traceID(1), "lookup"))
	h.settle()
	require.NoError(t, h.shutdown(t.Context()))
	assert.Empty(t, sinkSpans(h.sink))
	assert.EqualValues(t, 1, h.sum(metadata.MetricEarlyDecisions, causeAttr(causeShutdown)))
	assert.EqualValues(t, 1, h.sum(metadata.MetricToolAttempts))
	h.conservation()
}
