package buffer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// straddlingRun is an agent run whose charge failed early, under a step span that ends
// before the run does, and succeeded on retry at its end: first the model spans, the step
// and the failed attempt with its HTTP send (no root); last the retry and the root.
func straddlingRun(id pcommon.TraceID, models int) (first, last ptrace.Traces) {
	b := buffertest.NewSpanBuilder(id)
	rootID := pcommon.SpanID{0xff, id[15]}
	for i := range models {
		b.Span("chat gpt-x", rootID, int64(i*10), int64(i*10+5), map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.input.messages": fmt.Sprintf(`[{"role":"user","content":"step %d of a long run"}]`, i),
		})
	}
	step := b.Span("step 1", rootID, 1000, 1300, nil)
	attempt := b.Tool(step.SpanID(), "charge_card", "call-1", 1000, true)
	send := b.Span("POST /charge", attempt.SpanID(), 1010, 1190, map[string]any{"http.request.method": "POST", "http.response.status_code": 503})
	send.SetKind(ptrace.SpanKindClient)
	send.Status().SetCode(ptrace.StatusCodeError)
	first = b.Traces
	b = buffertest.Straggler(id)
	b.Tool(rootID, "charge_card", "call-1", 5000, false)
	root := b.Root()
	root.SetSpanID(rootID)
	return first, b.Traces
}

// A call whose failed attempt came in a part decided past max_trace_bytes and whose retry
// came in the rest is recorded once, by the rest, as the storm the trace shows, partial;
// not as an unrecovered failure of one attempt. The call and the trace are counted once.
func TestACallStraddlingAProvisionalDecisionIsRecordedOnce(t *testing.T) {
	id := buffertest.TraceID(21)
	first, last := straddlingRun(id, 40)
	cfg := oneShard(0)
	cfg.MaxTraceBytes = pieceSize(first) - 1
	h := newHarness(t, cfg, nil)
	h.Consume(first)
	h.CatchUp()
	assert.EqualValues(t, 1, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseTraceBytes)))
	require.Len(t, buffertest.SinkSpans(h.Sink)[id], 41, "the part is kept for its failure, without the call")
	assert.EqualValues(t, 2, h.Sum(metadata.MetricBufferedSpans), "the attempt and its send wait for the rest")
	assert.Zero(t, h.Sum(metadata.MetricCalls), "the call is not counted with the part")
	reasons := 0
	for _, s := range buffertest.SinkSpans(h.Sink)[id] {
		assert.Zero(t, s.Events().Len(), "span %s: no finding event (unrecovered_failure on the step)", s.Name())
		_, annotated := s.Attributes().Get(stormrecord.AttrCallKey)
		assert.False(t, annotated, "span %s: no attempt of the call is forwarded with the part", s.Name())
		if v, ok := s.Attributes().Get(stormrecord.AttrSampling); ok {
			assert.Equal(t, "tool_error", v.Str())
			reasons++
		}
	}
	assert.Equal(t, 1, reasons, "the part's decision is on the first span it forwards")

	h.Clock.Advance(time.Second)
	h.Consume(last)
	h.Advance(cfg.RootGrace)
	got := buffertest.SinkSpans(h.Sink)[id]
	require.Len(t, got, 41+2+2, "every span forwarded once")
	records := allSummaries(t, got)
	require.Len(t, records, 1)
	r := records[0]
	assert.True(t, r.Storm)
	assert.Equal(t, []string{"error", "ok"}, r.Statuses)
	assert.Equal(t, 1, r.Layers.Transport, "the send went with its attempt")
	assert.True(t, r.Partial)
	assert.False(t, slices.ContainsFunc(r.Findings, func(f stormrecord.Finding) bool { return f.Kind == "unrecovered_failure" }))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces), "the trace is counted once")
	assert.EqualValues(t, 1, h.Sum(metadata.MetricCalls))
	assert.EqualValues(t, 2, h.Sum(metadata.MetricToolAttempts))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSignals, lateSignalAttrs(CauseTraceBytes, "storm")...))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSignals), "no late signal from the call held")
	h.Conservation()
}

// Parts decided again and again past max_trace_bytes hold the call each time, and count
// the trace once.
func TestACallIsHeldAcrossEveryProvisionalPart(t *testing.T) {
	id := buffertest.TraceID(22)
	first, last := straddlingRun(id, 40)
	cfg := oneShard(0)
	cfg.MaxTraceBytes = pieceSize(first) - 1
	h := newHarness(t, cfg, nil)
	h.Consume(first)
	for range 3 {
		more := newAgentRun(id, 50)
		h.Consume(more.models)
	}
	h.Consume(last)
	h.Advance(cfg.RootGrace)
	assert.EqualValues(t, 4, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseTraceBytes)), "the first part and each of the three next")
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricCalls))
	records := allSummaries(t, buffertest.SinkSpans(h.Sink)[id])
	require.Len(t, records, 1)
	assert.Equal(t, []string{"error", "ok"}, records[0].Statuses)
	h.Conservation()
}

// What is held is bounded: never a whole part (its decision must free something), never
// more than a quarter of max_trace_bytes. A call not held is recorded with its part,
// partial.
func TestHoldingBackIsBounded(t *testing.T) {
	t.Run("a part of nothing but the call", func(t *testing.T) {
		id := buffertest.TraceID(23)
		b := buffertest.NewSpanBuilder(id)
		b.Tool(pcommon.SpanID{0xff}, "charge_card", "call-1", 1000, true)
		cfg := oneShard(0)
		cfg.MaxTraceBytes = pieceSize(b.Traces) - 1
		h := newHarness(t, cfg, nil)
		h.Consume(b.Traces)
		h.CatchUp()
		assert.Zero(t, h.Sum(metadata.MetricBufferedSpans))
		records := allSummaries(t, buffertest.SinkSpans(h.Sink)[id])
		require.Len(t, records, 1)
		assert.True(t, records[0].Partial)
		h.Conservation()
	})
	t.Run("a call too large to hold", func(t *testing.T) {
		id := buffertest.TraceID(24)
		first, _ := straddlingRun(id, 40)
		spans := first.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i := range spans.Len() {
			if strings.HasPrefix(spans.At(i).Name(), "execute_tool") {
				spans.At(i).Attributes().PutStr("gen_ai.tool.call.arguments", strings.Repeat("x", int(pieceSize(first)/2)))
			}
		}
		cfg := oneShard(0)
		cfg.MaxTraceBytes = pieceSize(first) - 1
		h := newHarness(t, cfg, nil)
		h.Consume(first)
		h.CatchUp()
		assert.Zero(t, h.Sum(metadata.MetricBufferedSpans))
		records := allSummaries(t, buffertest.SinkSpans(h.Sink)[id])
		require.Len(t, records, 1)
		assert.True(t, records[0].Partial, "a call of a fragment's part may go on")
		h.Conservation()
	})
}

// The decision of a part whose calls are held back may be pushed out of the cache while
// its rest waits: the trace's later spans still join the rest, which holds what it needs
// of the decision, instead of being dropped as spans of a forgotten trace.
func TestAHeldRestOutlivesItsForgottenDecision(t *testing.T) {
	id := buffertest.TraceID(25)
	first, last := straddlingRun(id, 40)
	cfg := oneShard(0)
	cfg.DecisionCache.KeptTraces = 1
	cfg.MaxTraceBytes = pieceSize(first) - 1
	h := newHarness(t, cfg, nil)
	h.Consume(first)
	h.Consume(forcedKeeps(100, 3, true))
	h.Advance(cfg.RootGrace)
	require.Positive(t, h.Sum(metadata.MetricSignalEvictions, attribute.String("reason", "tool_error")))
	h.Consume(last)
	h.Advance(cfg.RootGrace)
	assert.Zero(t, h.Sum(metadata.MetricLateSpans, attribute.String("decision", "forgotten")))
	records := allSummaries(t, buffertest.SinkSpans(h.Sink)[id])
	require.Len(t, records, 1)
	assert.Equal(t, []string{"error", "ok"}, records[0].Statuses)
	h.Conservation()
}
