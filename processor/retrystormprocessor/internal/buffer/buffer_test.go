package retrystormprocessor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// interleave deals the spans of many traces into batches that each mix spans of several
// traces, so every batch is cut by trace id and every trace arrives over many calls.
func interleave(traces []ptrace.Traces, perBatch int) []ptrace.Traces {
	var singles [][]ptrace.Traces
	for _, td := range traces {
		singles = append(singles, oneSpanPer(td))
	}
	var batches []ptrace.Traces
	cur := ptrace.NewTraces()
	for round := 0; ; round++ {
		any := false
		for _, spans := range singles {
			if round >= len(spans) {
				continue
			}
			any = true
			spans[round].ResourceSpans().MoveAndAppendTo(cur.ResourceSpans())
			if cur.SpanCount() >= perBatch {
				batches = append(batches, cur)
				cur = ptrace.NewTraces()
			}
		}
		if !any {
			break
		}
	}
	if cur.SpanCount() > 0 {
		batches = append(batches, cur)
	}
	return batches
}

func TestTraceSplitAcrossCallsAndShardsIsDecidedOnceWhole(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 100
	h := newHarness(t, cfg, nil)
	var traces []ptrace.Traces
	for i := range 40 {
		if i%2 == 0 {
			traces = append(traces, stormTrace(traceID(uint64(i))))
		} else {
			traces = append(traces, cleanTrace(traceID(uint64(i)), "lookup", "fetch", "summarize"))
		}
	}
	batches := interleave(traces, 7)
	require.Greater(t, len(batches), 20)
	for i, b := range batches {
		h.consume(b)
		if i%5 == 0 {
			h.advance(100 * time.Millisecond) // deadlines are checked between arrivals
		}
	}
	h.advance(3 * time.Second)

	byTrace := sinkSpans(h.sink)
	require.Len(t, byTrace, 40)
	for id, spans := range byTrace {
		require.Lenf(t, spans, 4, "trace %s forwarded whole", id)
		for _, s := range spans {
			if s.ParentSpanID().IsEmpty() {
				assert.Contains(t, s.Attributes().AsRaw(), stormrecord.AttrSampling)
				continue
			}
			if s.Attributes().AsRaw()[stormrecord.AttrCallStorm] == true {
				assert.EqualValues(t, 3, s.Attributes().AsRaw()[stormrecord.AttrCallAttempts], "analysed with every attempt")
			}
		}
	}
	assert.EqualValues(t, 40, h.sum(metadata.MetricTraces), "each trace decided once")
	assert.EqualValues(t, 20, h.sum(metadata.MetricStormCalls))
	assert.Zero(t, h.sum(metadata.MetricLateSpans))
	h.conservation()
}

func TestDeadlines(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	withRoot, noRoot, lateRoot := traceID(1), traceID(2), traceID(3)
	h.consume(stormTrace(withRoot))
	h.consume(withoutRoot(stormTrace(noRoot)))
	late := stormTrace(lateRoot)
	h.consume(withoutRoot(stormTrace(lateRoot)))

	h.advance(2*time.Second - time.Nanosecond)
	assert.NotContains(t, sinkSpans(h.sink), withRoot)
	h.advance(time.Nanosecond)
	assert.Contains(t, sinkSpans(h.sink), withRoot, "root arrival + root_grace")

	h.advance(27 * time.Second) // t = 29s: the late root arrives, its grace would end at 31s
	var root ptrace.Traces
	for _, one := range oneSpanPer(late) {
		if one.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).ParentSpanID().IsEmpty() {
			root = one
		}
	}
	h.consume(root)
	h.advance(time.Second - time.Nanosecond)
	assert.NotContains(t, sinkSpans(h.sink), noRoot)
	h.advance(time.Nanosecond) // t = 30s
	got := sinkSpans(h.sink)
	assert.Len(t, got[noRoot], 3, "first span + decision_wait without a root")
	assert.Len(t, got[lateRoot], 4, "decision_wait comes first")
	h.conservation()
}

func TestDueTracesAreDecidedOnIngestWithoutTicks(t *testing.T) {
	// Synchronous mode has no ticker at all: only arrivals can trigger the decision.
	h := newHarness(t, testConfig(), nil, withSynchronous())
	h.consume(stormTrace(traceID(1)))
	h.clock.Advance(time.Minute)
	for i := range 4 * h.p.cfg.NumShards {
		h.consume(withoutRoot(stormTrace(traceID(uint64(100 + i)))))
	}
	assert.Contains(t, sinkSpans(h.sink), traceID(1))
}

func TestLateSpansFollowTheCachedDecision(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	kept, dropped := traceID(1), traceID(2)
	h.consume(stormTrace(kept))
	h.consume(cleanTrace(dropped, "lookup"))
	h.advance(2 * time.Second)
	require.Len(t, sinkSpans(h.sink)[kept], 4)
	require.NotContains(t, sinkSpans(h.sink), dropped)

	h.consume(lateAttempt(kept, "charge_card", "call-9", 5000))
	h.consume(lateAttempt(dropped, "lookup", "call-9", 5000))
	h.settle()

	spans := sinkSpans(h.sink)
	require.Len(t, spans[kept], 5, "a late span of a kept trace is forwarded at once")
	last := spans[kept][4].Attributes().AsRaw()
	assert.NotContains(t, last, "gen_ai.tool.call.arguments", "and redacted")
	assert.NotContains(t, spans, dropped)
	assert.EqualValues(t, 1, h.sum(metadata.MetricLateSpans, attribute.String("decision", "kept")))
	assert.EqualValues(t, 1, h.sum(metadata.MetricLateSpans, attribute.String("decision", "dropped")))
	assert.EqualValues(t, 1, h.sum(metadata.MetricSpansDropped, causeAttr(dropLate)))
	assert.EqualValues(t, 2, h.sum(metadata.MetricTraces), "late spans do not make new decisions")
	h.conservation()
}

func TestLateSpansOfKeptCleanTracesCarryTheThreshold(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 50
	h := newHarness(t, cfg, nil, withSynchronous())
	var id pcommon.TraceID
	for i := uint64(0); ; i++ {
		if keep, _ := consistentKeep(t, 50, traceID(i)); keep {
			id = traceID(i)
			break
		}
	}
	h.consume(cleanTrace(id, "lookup"))
	h.advance(2 * time.Second)
	late := straggler(id)
	late.span("http GET", pcommon.SpanID{1}, 10, 20, nil)
	h.consume(late.td)
	spans := sinkSpans(h.sink)[id]
	require.Len(t, spans, 3)
	_, th := consistentKeep(t, 50, id)
	assert.Equal(t, "ot=th:"+th.TValue(), spans[2].TraceState().AsRaw())
}

func TestLateIsErrorAttemptOfAKeptTraceIsRemapped(t *testing.T) {
	h := newHarness(t, testConfig(), nil, withSynchronous())
	id := traceID(7)
	h.consume(stormTrace(id))
	h.advance(2 * time.Second)
	late := straggler(id)
	late.span("tools/call lookup", pcommon.SpanID{1}, 10, 20, map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup",
		"gen_ai.tool.call.result": `{"content":[{"type":"text","text":"denied"}],"isError":true}`,
	})
	h.consume(late.td)
	spans := sinkSpans(h.sink)[id]
	require.Len(t, spans, 5)
	last := spans[4]
	assert.Equal(t, ptrace.StatusCodeError, last.Status().Code())
	v, ok := last.Attributes().Get("error.type")
	require.True(t, ok)
	assert.Equal(t, "tool_error", v.Str())
	_, raw := last.Attributes().Get("gen_ai.tool.call.result")
	assert.False(t, raw, "late payloads are redacted too")
	assert.EqualValues(t, 1, h.sum(metadata.MetricStatusRemapped))
}

func TestMemoryPressureShedsCleanTracesFirstAndKeepsStorms(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	storm := pieceSize(withoutRoot(stormTrace(traceID(0))))
	clean := pieceSize(withoutRoot(cleanTrace(traceID(0), "lookup", "fetch", "summarize")))
	// Room for every storm trace and a few clean ones.
	cfg.MaxBufferedBytes = 10*storm + 5*clean
	h := newHarness(t, cfg, nil)
	var storms []pcommon.TraceID
	for i := range 200 {
		id := traceID(uint64(i))
		if i%20 == 0 {
			storms = append(storms, id)
			h.consume(withoutRoot(stormTrace(id)))
		} else {
			h.consume(withoutRoot(cleanTrace(id, "lookup", "fetch", "summarize")))
		}
		h.settle()
		require.LessOrEqual(t, h.sum(metadata.MetricBufferedBytes), cfg.MaxBufferedBytes)
	}
	for _, id := range storms {
		require.NotContains(t, sinkSpans(h.sink), id, "storm traces wait while clean ones can be shed")
	}
	assert.Positive(t, h.sum(metadata.MetricEarlyDecisions, causeAttr(causeMemoryPressure)))
	assert.Positive(t, h.sum(metadata.MetricSpansDropped, causeAttr(dropSampledOut)))

	h.advance(30 * time.Second)
	got := sinkSpans(h.sink)
	for _, id := range storms {
		assert.Len(t, got[id], 3, "every storm trace kept whole")
	}
	h.conservation()
}

func TestMemoryPressureKeepsAndFlushesStormsWhenNothingCleanIsLeft(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.MaxBufferedBytes = 3 * pieceSize(withoutRoot(stormTrace(traceID(0))))
	h := newHarness(t, cfg, nil)
	for i := range 50 {
		h.consume(withoutRoot(stormTrace(traceID(uint64(i)))))
	}
	h.settle()
	assert.LessOrEqual(t, h.sum(metadata.MetricBufferedBytes), cfg.MaxBufferedBytes)
	got := sinkSpans(h.sink)
	assert.GreaterOrEqual(t, len(got), 47, "storms beyond the bound are kept and flushed early")
	for _, spans := range got {
		assert.Len(t, spans, 3)
	}
	assert.Zero(t, h.sum(metadata.MetricSpansDropped), "never dropped for lack of room")
	require.NoError(t, h.shutdown(t.Context()))
	assert.Len(t, sinkSpans(h.sink), 50)
	h.conservation()
}

// A buffer full of set-aside storms must not judge a new trace on its first fragment: its
// storm, arriving in the next request, would be dropped as late.
func TestMemoryPressureDoesNotJudgeATraceOnItsFirstFragment(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	cfg.MaxBufferedBytes = 4 * pieceSize(withoutRoot(stormTrace(traceID(0))))
	h := newHarness(t, cfg, nil)
	for i := range 4 {
		h.consume(withoutRoot(stormTrace(traceID(uint64(i)))))
		h.settle()
	}
	id := traceID(99)
	b := newSpanBuilder(id)
	root := b.root()
	first := ptrace.NewTraces()
	b.td.ResourceSpans().CopyTo(first.ResourceSpans())
	for i := range 3 {
		b.tool(root.SpanID(), "charge_card", "call-1", int64(100+i*300), i < 2)
	}
	// The first request holds only the root; the storm's attempts follow in the next.
	rest := ptrace.NewTraces()
	b.td.ResourceSpans().CopyTo(rest.ResourceSpans())
	rest.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool {
		return s.ParentSpanID().IsEmpty()
	})
	h.consume(first)
	h.settle()
	h.consume(rest)
	h.settle()
	h.advance(30 * time.Second)
	assert.Len(t, sinkSpans(h.sink)[id], 4, "the storm trace is kept whole")
	assert.Zero(t, h.sum(metadata.MetricLateSpans), "no span of it came after a decision")
	h.conservation()
}

func pieceSize(td ptrace.Traces) int64 {
	return int64((&ptrace.ProtoMarshaler{}).TracesSize(td))
}

// gate blocks forwarding of the traces it holds until opened, counting what it forwards.
type gate struct {
	held  map[pcommon.TraceID]bool
	open  chan struct{}
	mu    sync.Mutex
	spans int
}

func (g *gate) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (g *gate) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	blocked := false
	for _, s := range tracespans.All(td) {
		blocked = blocked || g.held[s.TraceID()]
	}
	if blocked {
		<-g.open
	}
	g.mu.Lock()
	g.spans += td.SpanCount()
	g.mu.Unlock()
	return nil
}

// TestAGivenUpRequestReachesNoShard: when the caller gives up while one shard's input is
// full, no other shard keeps the request's pieces, so the caller's retry does not buffer
// them twice.
func TestAGivenUpRequestReachesNoShard(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 2
	cfg.RootGrace = 0
	cfg.Sampling.CleanPercent = 100
	// Trace ids by shard: the blocked shard's, and the free one's.
	var blockedIDs, freeIDs []pcommon.TraceID
	for n := uint64(1); len(blockedIDs) < 20 || len(freeIDs) < 2; n++ {
		id := traceID(n)
		if shardOf(id, 2) == 1 {
			blockedIDs = append(blockedIDs, id)
		} else {
			freeIDs = append(freeIDs, id)
		}
	}
	g := &gate{held: map[pcommon.TraceID]bool{blockedIDs[0]: true}, open: make(chan struct{})}
	h := newHarness(t, cfg, g)
	defer func() {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
	}()
	// The blocked shard forwards its first trace into the gate and stops taking input;
	// its input fills up behind it.
	sent := 0
	for _, id := range blockedIDs[:17] {
		td := cleanTrace(id, "lookup")
		sent += td.SpanCount()
		h.consume(td)
	}
	// A request for both shards, the free one first, with a caller that gives up.
	req := cleanTrace(freeIDs[0], "lookup")
	cleanTrace(blockedIDs[17], "lookup").ResourceSpans().MoveAndAppendTo(req.ResourceSpans())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.Error(t, h.p.ConsumeTraces(ctx, req))

	// The caller's retry, after the shard is free again, and one more request.
	close(g.open)
	retry := cleanTrace(freeIDs[0], "lookup")
	cleanTrace(blockedIDs[17], "lookup").ResourceSpans().MoveAndAppendTo(retry.ResourceSpans())
	sent += retry.SpanCount()
	h.consume(retry)
	h.advance(time.Second)
	assert.EqualValues(t, sent, h.sum(metadata.MetricSpansReceived), "the given-up request reached no shard")
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, sent, g.spans, "every span forwarded once")
}

// retryTrace is a root and one charge_card call run twice, both ok: a storm
// (retry_after_success) without an error span, so memory pressure analyses it to see it.
func retryTrace(id pcommon.TraceID) ptrace.Traces {
	return chargeCardTrace(id, false, false)
}

// A trace memory pressure set aside for a signal is decided by a full analysis of all it
// holds then, attempts that came after it was set aside included.
func TestMemoryPressureSetsAsideAStormAndAnalysesItWholeAtItsDecision(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	retry := pieceSize(withoutRoot(retryTrace(traceID(0))))
	clean := pieceSize(withoutRoot(cleanTrace(traceID(0), "lookup", "fetch", "summarize")))
	cfg.MaxBufferedBytes = 2*retry + 3*clean
	h := newHarness(t, cfg, nil, withSynchronous())
	kept, grown := traceID(1), traceID(2)
	h.consume(withoutRoot(retryTrace(kept)))
	h.consume(withoutRoot(retryTrace(grown)))
	for i := range 20 {
		h.consume(withoutRoot(cleanTrace(traceID(uint64(100+i)), "lookup", "fetch", "summarize")))
	}
	for _, id := range []pcommon.TraceID{kept, grown} {
		pt := h.p.shards[0].traces[id]
		require.NotNil(t, pt, "the storm trace waits while clean ones are shed")
		require.True(t, pt.flagged, "set aside for its signal")
	}
	assert.Positive(t, h.sum(metadata.MetricEarlyDecisions, causeAttr(causeMemoryPressure)))

	// A third attempt of grown arrives after it was set aside.
	h.consume(lateAttempt(grown, "charge_card", "call-1", 900))

	h.advance(30 * time.Second)
	got := sinkSpans(h.sink)
	require.Len(t, got[kept], 2)
	require.Len(t, got[grown], 3)
	for id, want := range map[pcommon.TraceID]int64{kept: 2, grown: 3} {
		for _, s := range got[id] {
			v, ok := s.Attributes().Get("retrystorm.call.attempts")
			require.True(t, ok, "every attempt is annotated")
			assert.Equal(t, want, v.Int(), "annotations count the attempts the trace holds at its decision")
		}
	}
	h.conservation()
}
