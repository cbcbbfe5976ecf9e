package buffer

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
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// interleave deals the spans of many traces into batches that each mix spans of several
// traces, so every batch is cut by trace id and every trace arrives over many calls.
func interleave(traces []ptrace.Traces, perBatch int) []ptrace.Traces {
	var singles [][]ptrace.Traces
	for _, td := range traces {
		singles = append(singles, tracespans.OnePerRequest(td))
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
			traces = append(traces, buffertest.StormTrace(buffertest.TraceID(uint64(i))))
		} else {
			traces = append(traces, buffertest.CleanTrace(buffertest.TraceID(uint64(i)), "lookup", "fetch", "summarize"))
		}
	}
	batches := interleave(traces, 7)
	require.Greater(t, len(batches), 20)
	for i, b := range batches {
		h.Consume(b)
		if i%5 == 0 {
			h.Advance(100 * time.Millisecond) // deadlines are checked between arrivals
		}
	}
	h.Advance(3 * time.Second)

	byTrace := buffertest.SinkSpans(h.Sink)
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
	assert.EqualValues(t, 40, h.Sum(metadata.MetricTraces), "each trace decided once")
	assert.EqualValues(t, 20, h.Sum(metadata.MetricStormCalls))
	assert.Zero(t, h.Sum(metadata.MetricLateSpans))
	h.Conservation()
}

func TestDeadlines(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	withRoot, noRoot, lateRoot := buffertest.TraceID(1), buffertest.TraceID(2), buffertest.TraceID(3)
	h.Consume(buffertest.StormTrace(withRoot))
	h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(noRoot)))
	late := buffertest.StormTrace(lateRoot)
	h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(lateRoot)))

	h.Advance(2*time.Second - time.Nanosecond)
	assert.NotContains(t, buffertest.SinkSpans(h.Sink), withRoot)
	h.Advance(time.Nanosecond)
	assert.Contains(t, buffertest.SinkSpans(h.Sink), withRoot, "root arrival + root_grace")

	h.Advance(27 * time.Second) // t = 29s: the late root arrives, its grace would end at 31s
	var root ptrace.Traces
	for _, one := range tracespans.OnePerRequest(late) {
		if one.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).ParentSpanID().IsEmpty() {
			root = one
		}
	}
	h.Consume(root)
	h.Advance(time.Second - time.Nanosecond)
	assert.NotContains(t, buffertest.SinkSpans(h.Sink), noRoot)
	h.Advance(time.Nanosecond) // t = 30s
	got := buffertest.SinkSpans(h.Sink)
	assert.Len(t, got[noRoot], 3, "first span + decision_wait without a root")
	assert.Len(t, got[lateRoot], 4, "decision_wait comes first")
	h.Conservation()
}

func TestDueTracesAreDecidedOnIngestWithoutTicks(t *testing.T) {
	// Synchronous mode has no ticker at all: only arrivals can trigger the decision.
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	h.Consume(buffertest.StormTrace(buffertest.TraceID(1)))
	h.Clock.Advance(time.Minute)
	for i := range 4 * h.buffer.cfg.NumShards {
		h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(uint64(100 + i)))))
	}
	assert.Contains(t, buffertest.SinkSpans(h.Sink), buffertest.TraceID(1))
}

func TestLateSpansFollowTheCachedDecision(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	kept, dropped := buffertest.TraceID(1), buffertest.TraceID(2)
	h.Consume(buffertest.StormTrace(kept))
	h.Consume(buffertest.CleanTrace(dropped, "lookup"))
	h.Advance(2 * time.Second)
	require.Len(t, buffertest.SinkSpans(h.Sink)[kept], 4)
	require.NotContains(t, buffertest.SinkSpans(h.Sink), dropped)

	h.Consume(buffertest.LateAttempt(kept, "charge_card", "call-9", 5000))
	h.Consume(buffertest.LateAttempt(dropped, "lookup", "call-9", 5000))
	h.CatchUp()

	spans := buffertest.SinkSpans(h.Sink)
	require.Len(t, spans[kept], 5, "a late span of a kept trace is forwarded at once")
	last := spans[kept][4].Attributes().AsRaw()
	assert.NotContains(t, last, "gen_ai.tool.call.arguments", "and redacted")
	assert.NotContains(t, spans, dropped)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSpans, attribute.String("decision", "kept")))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSpans, attribute.String("decision", "dropped")))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricSpansDropped, causeAttr(DropLate)))
	assert.EqualValues(t, 2, h.Sum(metadata.MetricTraces), "late spans do not make new decisions")
	h.Conservation()
}

func TestLateSpansOfKeptCleanTracesCarryTheThreshold(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 50
	h := newHarness(t, cfg, nil, WithSynchronous())
	var id pcommon.TraceID
	for i := uint64(0); ; i++ {
		if keep, _ := consistentKeep(t, 50, buffertest.TraceID(i)); keep {
			id = buffertest.TraceID(i)
			break
		}
	}
	h.Consume(buffertest.CleanTrace(id, "lookup"))
	h.Advance(2 * time.Second)
	late := buffertest.Straggler(id)
	late.Span("http GET", pcommon.SpanID{1}, 10, 20, nil)
	h.Consume(late.Traces)
	spans := buffertest.SinkSpans(h.Sink)[id]
	require.Len(t, spans, 3)
	_, th := consistentKeep(t, 50, id)
	assert.Equal(t, "ot=th:"+th.TValue(), spans[2].TraceState().AsRaw())
}

func TestLateIsErrorAttemptOfAKeptTraceIsRemapped(t *testing.T) {
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	id := buffertest.TraceID(7)
	h.Consume(buffertest.StormTrace(id))
	h.Advance(2 * time.Second)
	late := buffertest.Straggler(id)
	late.Span("tools/call lookup", pcommon.SpanID{1}, 10, 20, map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup",
		"gen_ai.tool.call.result": `{"content":[{"type":"text","text":"denied"}],"isError":true}`,
	})
	h.Consume(late.Traces)
	spans := buffertest.SinkSpans(h.Sink)[id]
	require.Len(t, spans, 5)
	last := spans[4]
	assert.Equal(t, ptrace.StatusCodeError, last.Status().Code())
	v, ok := last.Attributes().Get("error.type")
	require.True(t, ok)
	assert.Equal(t, "tool_error", v.Str())
	_, raw := last.Attributes().Get("gen_ai.tool.call.result")
	assert.False(t, raw, "late payloads are redacted too")
	assert.EqualValues(t, 1, h.Sum(metadata.MetricStatusRemapped))
}

func TestMemoryPressureShedsCleanTracesFirstAndKeepsStorms(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	storm := pieceSize(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(0))))
	clean := pieceSize(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(0), "lookup", "fetch", "summarize")))
	// Room for every storm trace and a few clean ones.
	cfg.MaxBufferedBytes = 10*storm + 5*clean
	h := newHarness(t, cfg, nil)
	var storms []pcommon.TraceID
	for i := range 200 {
		id := buffertest.TraceID(uint64(i))
		if i%20 == 0 {
			storms = append(storms, id)
			h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(id)))
		} else {
			h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(id, "lookup", "fetch", "summarize")))
		}
		h.CatchUp()
		require.LessOrEqual(t, h.Sum(metadata.MetricBufferedBytes), cfg.MaxBufferedBytes)
	}
	for _, id := range storms {
		require.NotContains(t, buffertest.SinkSpans(h.Sink), id, "storm traces wait while clean ones can be shed")
	}
	assert.Positive(t, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseMemoryPressure)))
	assert.Positive(t, h.Sum(metadata.MetricSpansDropped, causeAttr(DropSampledOut)))

	h.Advance(30 * time.Second)
	got := buffertest.SinkSpans(h.Sink)
	for _, id := range storms {
		assert.Len(t, got[id], 3, "every storm trace kept whole")
	}
	h.Conservation()
}

func TestMemoryPressureKeepsAndFlushesStormsWhenNothingCleanIsLeft(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.MaxBufferedBytes = 3 * pieceSize(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(0))))
	h := newHarness(t, cfg, nil)
	for i := range 50 {
		h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(uint64(i)))))
	}
	h.CatchUp()
	assert.LessOrEqual(t, h.Sum(metadata.MetricBufferedBytes), cfg.MaxBufferedBytes)
	got := buffertest.SinkSpans(h.Sink)
	assert.GreaterOrEqual(t, len(got), 47, "storms beyond the bound are kept and flushed early")
	for _, spans := range got {
		assert.Len(t, spans, 3)
	}
	assert.Zero(t, h.Sum(metadata.MetricSpansDropped), "never dropped for lack of room")
	require.NoError(t, h.Shutdown(t.Context()))
	assert.Len(t, buffertest.SinkSpans(h.Sink), 50)
	h.Conservation()
}

// A buffer full of set-aside storms must not judge a new trace on its first fragment: its
// storm, arriving in the next request, would be dropped as late.
func TestMemoryPressureDoesNotJudgeATraceOnItsFirstFragment(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	cfg.MaxBufferedBytes = 4 * pieceSize(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(0))))
	h := newHarness(t, cfg, nil)
	for i := range 4 {
		h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(uint64(i)))))
		h.CatchUp()
	}
	id := buffertest.TraceID(99)
	b := buffertest.NewSpanBuilder(id)
	root := b.Root()
	first := ptrace.NewTraces()
	b.Traces.ResourceSpans().CopyTo(first.ResourceSpans())
	for i := range 3 {
		b.Tool(root.SpanID(), "charge_card", "call-1", int64(100+i*300), i < 2)
	}
	// The first request holds only the root; the storm's attempts follow in the next.
	rest := ptrace.NewTraces()
	b.Traces.ResourceSpans().CopyTo(rest.ResourceSpans())
	rest.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool {
		return s.ParentSpanID().IsEmpty()
	})
	h.Consume(first)
	h.CatchUp()
	h.Consume(rest)
	h.CatchUp()
	h.Advance(30 * time.Second)
	assert.Len(t, buffertest.SinkSpans(h.Sink)[id], 4, "the storm trace is kept whole")
	assert.Zero(t, h.Sum(metadata.MetricLateSpans), "no span of it came after a decision")
	h.Conservation()
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
		id := buffertest.TraceID(n)
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
		td := buffertest.CleanTrace(id, "lookup")
		sent += td.SpanCount()
		h.Consume(td)
	}
	// A request for both shards, the free one first, with a caller that gives up.
	req := buffertest.CleanTrace(freeIDs[0], "lookup")
	buffertest.CleanTrace(blockedIDs[17], "lookup").ResourceSpans().MoveAndAppendTo(req.ResourceSpans())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.Error(t, h.buffer.ConsumeTraces(ctx, req))

	// The caller's retry, after the shard is free again, and one more request.
	close(g.open)
	retry := buffertest.CleanTrace(freeIDs[0], "lookup")
	buffertest.CleanTrace(blockedIDs[17], "lookup").ResourceSpans().MoveAndAppendTo(retry.ResourceSpans())
	sent += retry.SpanCount()
	h.Consume(retry)
	h.Advance(time.Second)
	assert.EqualValues(t, sent, h.Sum(metadata.MetricSpansReceived), "the given-up request reached no shard")
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, sent, g.spans, "every span forwarded once")
}

// retryTrace is a root and one charge_card call run twice, both ok: a storm
// (retry_after_success) without an error span, so memory pressure analyses it to see it.
func retryTrace(id pcommon.TraceID) ptrace.Traces {
	return buffertest.ChargeCardTrace(id, false, false)
}

// A trace memory pressure set aside for a signal is decided by a full analysis of all it
// holds then, attempts that came after it was set aside included.
func TestMemoryPressureSetsAsideAStormAndAnalysesItWholeAtItsDecision(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	retry := pieceSize(buffertest.WithoutRoot(retryTrace(buffertest.TraceID(0))))
	clean := pieceSize(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(0), "lookup", "fetch", "summarize")))
	cfg.MaxBufferedBytes = 2*retry + 3*clean
	h := newHarness(t, cfg, nil, WithSynchronous())
	kept, grown := buffertest.TraceID(1), buffertest.TraceID(2)
	h.Consume(buffertest.WithoutRoot(retryTrace(kept)))
	h.Consume(buffertest.WithoutRoot(retryTrace(grown)))
	for i := range 20 {
		h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(uint64(100+i)), "lookup", "fetch", "summarize")))
	}
	for _, id := range []pcommon.TraceID{kept, grown} {
		pt := h.buffer.shards[0].traces[id]
		require.NotNil(t, pt, "the storm trace waits while clean ones are shed")
		require.Equal(t, signalled, pt.state, "set aside for its signal")
	}
	assert.Positive(t, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseMemoryPressure)))

	// A third attempt of grown arrives after it was set aside.
	h.Consume(buffertest.LateAttempt(grown, "charge_card", "call-1", 900))

	h.Advance(30 * time.Second)
	got := buffertest.SinkSpans(h.Sink)
	require.Len(t, got[kept], 2)
	require.Len(t, got[grown], 3)
	for id, want := range map[pcommon.TraceID]int64{kept: 2, grown: 3} {
		for _, s := range got[id] {
			v, ok := s.Attributes().Get("retrystorm.call.attempts")
			require.True(t, ok, "every attempt is annotated")
			assert.Equal(t, want, v.Int(), "annotations count the attempts the trace holds at its decision")
		}
	}
	h.Conservation()
}

func TestTraceBytesBoundIsHalfTheShareOrTheKeyCappedAtTheShare(t *testing.T) {
	assert.EqualValues(t, 8<<20, traceBytesBound(0, 16<<20), "0: half the share")
	assert.EqualValues(t, 4<<20, traceBytesBound(4<<20, 16<<20))
	assert.EqualValues(t, 2<<20, traceBytesBound(4<<20, 2<<20), "never more than the share")
	assert.EqualValues(t, 1, traceBytesBound(0, 1), "a share of one byte still bounds")
}
