package buffer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

// TestAgingChangesNoDecision: agent traffic of every instrumentation shape and scenario,
// each trace sent as two pieces without its root and then the root, is decided and
// forwarded exactly alike whether the pieces wait long enough to be packed (or, showing an
// error, compacted) before the root arrives or not.
func TestAgingChangesNoDecision(t *testing.T) {
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 21, EveryScenario: true, Scenarios: agenttraffic.DefaultScenarioWeights()})
	require.NoError(t, err)
	traces := gen.Generate(len(agenttraffic.AllScenarios()) + 40)

	run := func(aged bool) (*harness, map[pcommon.TraceID][]string) {
		cfg := testConfig()
		cfg.NumShards = 1
		h := newHarness(t, cfg, nil)
		var packed int
		for piece := range 3 {
			for i := range traces {
				h.Consume(cutTrace(agenttraffic.TraceToPdata(&traces[i]), piece))
			}
			if aged && piece < 2 {
				h.Advance(compactHold)
				for _, pt := range h.buffer.shards[0].traces {
					if pt.packed != nil {
						packed++
					}
				}
			}
		}
		if aged {
			require.Positive(t, packed, "pieces waited long enough to be packed")
		}
		h.Advance(cfg.RootGrace)
		assert.Zero(t, h.Sum(metadata.MetricBufferedSpans), "every trace decided")
		h.Conservation()
		return h, forwardedSpans(h.Sink.AllTraces())
	}
	aged, agedOut := run(true)
	fresh, freshOut := run(false)

	require.NotEmpty(t, freshOut)
	assert.Equal(t, freshOut, agedOut, "the same spans forwarded, attribute for attribute")
	for _, d := range []string{metadata.AttributeDecisionKept, metadata.AttributeDecisionDropped} {
		for _, r := range append(sample.SignalReasons[:], sample.ReasonClean) {
			set := []attribute.KeyValue{attribute.String("decision", d), attribute.String("reason", string(r))}
			assert.Equal(t, fresh.Sum(metadata.MetricTraces, set...), aged.Sum(metadata.MetricTraces, set...), "traces %s for %s", d, r)
		}
	}
	for _, r := range []sample.Reason{sample.ReasonStorm, sample.ReasonToolError, sample.ReasonDivergence} {
		assert.Positive(t, fresh.Sum(metadata.MetricTraces, attribute.String("reason", string(r))), "traces kept for %s", r)
	}
	assert.Positive(t, fresh.Sum(metadata.MetricTraces, attribute.String("decision", metadata.AttributeDecisionDropped)))
	for _, m := range []string{metadata.MetricFindings, metadata.MetricToolAttempts, metadata.MetricCalls,
		metadata.MetricStormCalls, metadata.MetricStatusRemapped, metadata.MetricSpansDropped} {
		assert.Equal(t, fresh.Sum(m), aged.Sum(m), m)
	}
}

// cutTrace is one of three pieces of td under its resources and scopes: piece 0 and 1 the
// non-root spans alternately, piece 2 the roots.
func cutTrace(td ptrace.Traces, piece int) ptrace.Traces {
	out := ptrace.NewTraces()
	n := 0
	for _, rs := range td.ResourceSpans().All() {
		ors := out.ResourceSpans().AppendEmpty()
		rs.Resource().CopyTo(ors.Resource())
		for _, ss := range rs.ScopeSpans().All() {
			oss := ors.ScopeSpans().AppendEmpty()
			ss.Scope().CopyTo(oss.Scope())
			for _, s := range ss.Spans().All() {
				which := 2
				if !s.ParentSpanID().IsEmpty() {
					which = n % 2
					n++
				}
				if which == piece {
					s.CopyTo(oss.Spans().AppendEmpty())
				}
			}
		}
	}
	return out
}

// forwardedSpans describes each forwarded span (id, name, status, attributes, tracestate),
// sorted, by trace.
func forwardedSpans(tds []ptrace.Traces) map[pcommon.TraceID][]string {
	out := map[pcommon.TraceID][]string{}
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					out[s.TraceID()] = append(out[s.TraceID()], fmt.Sprintf("%s %s %s %q %v %q %v %s",
						s.SpanID(), s.Name(), s.Status().Code(), s.Status().Message(), s.Attributes().AsRaw(),
						s.TraceState().AsRaw(), rs.Resource().Attributes().AsRaw(), ss.Scope().Name()))
				}
			}
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// internedShare counts the attribute keys of pt's decoded spans, and those that point into
// the shard's key table.
func internedShare(sh *testShard, pt *testTrace) (n, shared int) {
	for _, s := range pt.set.All() {
		for k := range s.Attributes().All() {
			n++
			if in, ok := sh.keys.keys[k]; ok && unsafe.StringData(in) == unsafe.StringData(k) {
				shared++
			}
		}
	}
	return n, shared
}

// pressuredStorm starts a harness whose buffer holds a retried call waiting for its root
// (buffertest.TraceID(1)) and three clean waiting traces at most, and lets the storm wait until it is
// packed; the traces that follow press on the buffer.
func pressuredStorm(t *testing.T) (*harness, *testSetup, pcommon.TraceID) {
	cfg := testConfig()
	cfg.NumShards = 1
	retry := pieceSize(buffertest.WithoutRoot(retryTrace(buffertest.TraceID(0))))
	clean := pieceSize(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(0), "lookup", "fetch")))
	cfg.MaxBufferedBytes = retry + 3*clean
	h := newHarness(t, cfg, nil, WithSynchronous())
	storm := buffertest.TraceID(1)
	h.Consume(buffertest.WithoutRoot(retryTrace(storm)))
	h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(2), "lookup", "fetch")))
	h.Clock.Advance(compactHold)
	h.CatchUp()
	require.NotNil(t, h.buffer.shards[0].traces[storm].packed, "packed as it aged")
	require.NotNil(t, h.buffer.shards[0].traces[buffertest.TraceID(2)].packed)
	for i := range 10 {
		h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(uint64(100+i)), "lookup", "fetch")))
	}
	return h, cfg, storm
}

// TestPressureDecodesAPackedWaitingTraceToJudgeIt: memory pressure examines a packed
// trace still waiting for its root from every span: a storm is set aside and kept whole at
// its deadline, clean ones are dropped with every packed span counted.
func TestPressureDecodesAPackedWaitingTraceToJudgeIt(t *testing.T) {
	h, cfg, storm := pressuredStorm(t)
	sh := h.buffer.shards[0]
	pt := sh.traces[storm]
	require.NotNil(t, pt, "the storm waits while clean ones are shed")
	assert.Equal(t, signalled, pt.state, "examined from its packed spans, and set aside")
	assert.Nil(t, pt.packed)
	assert.Equal(t, 2, pt.set.Len())
	assert.Len(t, pt.notes.Arrivals(), 2)
	assert.NotContains(t, sh.traces, buffertest.TraceID(2), "the packed clean trace was shed")
	assert.Zero(t, h.Sum(metadata.MetricSpansDropped, causeAttr(DropUnpackError)))
	h.Conservation()

	h.Clock.Advance(cfg.DecisionWait)
	h.CatchUp()
	assert.Len(t, buffertest.SinkSpans(h.Sink)[storm], 2, "kept whole")
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("reason", "storm")))
	h.Conservation()
}

// TestASetAsideTraceDecodedByPressureIsCompacted: a packed waiting trace that memory
// pressure decodes and sets aside waits for its deadline compacted, as aging would have
// left it, not decoded as it came.
func TestASetAsideTraceDecodedByPressureIsCompacted(t *testing.T) {
	h, _, storm := pressuredStorm(t)
	sh := h.buffer.shards[0]
	pt := sh.traces[storm]
	require.Equal(t, signalled, pt.state)
	n, shared := internedShare(sh, pt)
	require.Positive(t, n)
	assert.Equal(t, n, shared, "set aside under pressure: attributes compacted")
}

// TestShutdownDecidesPackedWaitingTraces: at shutdown a packed trace still waiting for its
// root is decided from every span; past the shutdown deadline every span it holds, packed
// ones included, is counted as dropped.
func TestShutdownDecidesPackedWaitingTraces(t *testing.T) {
	for _, expired := range []bool{false, true} {
		t.Run(map[bool]string{false: "decided", true: "expired"}[expired], func(t *testing.T) {
			cfg := testConfig()
			cfg.NumShards = 1
			cfg.Sampling.CleanPercent = 0
			h := newHarness(t, cfg, nil, WithSynchronous())
			storm, clean := buffertest.TraceID(1), buffertest.TraceID(2)
			h.Consume(buffertest.WithoutRoot(retryTrace(storm)))
			h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(clean, "lookup")))
			h.Clock.Advance(compactHold)
			h.CatchUp()
			h.Consume(buffertest.LateAttempt(storm, "charge_card", "call-1", 900)) // decoded beside the packed spans
			for _, id := range []pcommon.TraceID{storm, clean} {
				require.NotNil(t, h.buffer.shards[0].traces[id].packed)
			}
			assert.EqualValues(t, 4, h.Sum(metadata.MetricBufferedSpans))
			if expired {
				h.buffer.cancel()
			}
			require.NoError(t, h.Shutdown(t.Context()))
			if expired {
				assert.Empty(t, buffertest.SinkSpans(h.Sink))
				assert.EqualValues(t, 4, h.Sum(metadata.MetricSpansDropped, causeAttr(DropShutdown)))
			} else {
				got := buffertest.SinkSpans(h.Sink)
				assert.Len(t, got[storm], 3, "kept whole")
				assert.NotContains(t, got, clean)
				assert.EqualValues(t, 1, h.Sum(metadata.MetricSpansDropped, causeAttr(DropSampledOut)))
				assert.EqualValues(t, 4, h.Sum(metadata.MetricToolAttempts))
			}
			assert.Zero(t, h.Sum(metadata.MetricSpansDropped, causeAttr(DropUnpackError)))
			assert.Zero(t, h.Sum(metadata.MetricBufferedSpans))
			h.Conservation()
		})
	}
}

// TestAnErrorPieceAfterPackingIsDecidedWhole: a trace packed while it looked clean, then
// sent an error span, keeps its packed spans packed and compacts the error piece as it
// ages; its decision (which skips triage) decodes the packed spans and forwards every span
// in arrival order, as if nothing had been packed.
func TestAnErrorPieceAfterPackingIsDecidedWhole(t *testing.T) {
	id := buffertest.TraceID(1)
	failing := func() ptrace.Traces {
		b := buffertest.Straggler(id)
		b.Tool(pcommon.SpanID{1}, "charge_card", "call-9", 900, true)
		return b.Traces
	}
	run := func(aged bool) (*harness, []pcommon.SpanID) {
		cfg := testConfig()
		cfg.NumShards = 1
		h := newHarness(t, cfg, nil)
		h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(id, "lookup", "fetch")))
		if aged {
			h.Advance(compactHold)
			require.Equal(t, 2, heldTrace(h, id).packedSpans)
		}
		h.Consume(failing())
		if aged {
			h.Advance(compactHold)
			pt := heldTrace(h, id)
			assert.True(t, pt.errorSeen)
			assert.Equal(t, 2, pt.packedSpans, "the spans packed before stay packed")
			assert.Equal(t, 1, pt.set.Len(), "the error piece is not packed")
			n, shared := internedShare(h.buffer.shards[0], pt)
			assert.Equal(t, n, shared, "the error piece is compacted")
			h.Conservation()
		}
		h.Advance(cfg.DecisionWait)
		var order []pcommon.SpanID
		for _, s := range buffertest.SinkSpans(h.Sink)[id] {
			order = append(order, s.SpanID())
		}
		h.Conservation()
		return h, order
	}
	aged, agedOrder := run(true)
	fresh, freshOrder := run(false)
	require.Len(t, freshOrder, 3)
	assert.Equal(t, freshOrder, agedOrder, "every span forwarded, in arrival order")
	for _, h := range []*harness{aged, fresh} {
		assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("decision", metadata.AttributeDecisionKept)))
	}
}

// TestPackedThenDecodedSpansKeepArrivalOrder: spans packed, spans arrived since and the
// root are decoded together in arrival order, whether the root's arrival decodes them
// (settling) or the decision does (a trace sampling keeps even clean, not settled): a
// duplicate span id is the second copy, as when nothing was packed.
func TestPackedThenDecodedSpansKeepArrivalOrder(t *testing.T) {
	id := buffertest.TraceID(1)
	first := buffertest.WithoutRoot(buffertest.ChargeCardTrace(id, false))
	dup := ptrace.NewTraces()
	first.CopyTo(dup)
	dup.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutStr("copy", "second")
	describe := func(spans []ptrace.Span) []string {
		var out []string
		for _, s := range spans {
			c := ""
			if v, ok := s.Attributes().Get("copy"); ok {
				c = v.Str()
			}
			out = append(out, s.SpanID().String()+"/"+c)
		}
		return out
	}
	run := func(keep, aged bool) []string {
		cfg := testConfig()
		cfg.NumShards = 1
		cfg.Sampling.CleanPercent = map[bool]float64{false: 0, true: 100}[keep]
		h := newHarness(t, cfg, nil)
		a := ptrace.NewTraces()
		first.CopyTo(a)
		h.Consume(a)
		if aged {
			h.Advance(compactHold)
			require.NotNil(t, heldTrace(h, id).packed)
		}
		d := ptrace.NewTraces()
		dup.CopyTo(d)
		h.Consume(d)
		h.Consume(buffertest.LateAttempt(id, "charge_card", "call-2", 900))
		if aged {
			pt := heldTrace(h, id)
			require.NotNil(t, pt.packed, "mixed: one span packed, two decoded")
			require.Equal(t, 2, pt.set.Len())
		}
		h.Consume(rootOf(id))
		pt := heldTrace(h, id)
		var out []string
		if !keep {
			require.Nil(t, pt.packed, "settling decodes")
			require.Len(t, pt.notes.Arrivals(), 4)
			var spans []ptrace.Span
			for _, s := range pt.set.All() {
				assert.Equal(t, s.SpanID(), pt.notes.Arrivals()[len(spans)].ID, "the notes follow the spans")
				spans = append(spans, s)
			}
			out = describe(spans)
		}
		h.Advance(cfg.RootGrace)
		if keep {
			out = describe(buffertest.SinkSpans(h.Sink)[id])
		}
		h.Conservation()
		return out
	}
	for _, keep := range []bool{false, true} {
		fresh := run(keep, false)
		require.Len(t, fresh, 4)
		assert.True(t, strings.HasSuffix(fresh[1], "/second"), "the duplicate follows the first copy")
		assert.Equal(t, fresh, run(keep, true), "keep %v", keep)
	}
}

// TestAPieceThatJoinsAQueuedTraceIsPackedWithIt pins when later pieces are packed: a piece
// arriving while its trace waits in the aging queue is packed with the trace's earlier
// spans, however little it has waited; one arriving after waits compactHold itself.
func TestAPieceThatJoinsAQueuedTraceIsPackedWithIt(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	h := newHarness(t, cfg, nil, WithSynchronous())
	id := buffertest.TraceID(1)
	h.Consume(buffertest.WithoutRoot(buffertest.ChargeCardTrace(id, false)))
	h.Clock.Advance(compactHold - time.Second)
	h.Consume(buffertest.LateAttempt(id, "charge_card", "call-1", 900))
	h.Clock.Advance(time.Second)
	h.CatchUp()
	pt := h.buffer.shards[0].traces[id]
	assert.Equal(t, 2, pt.packedSpans, "the second piece, 1s old, packed with the first")
	h.Consume(buffertest.LateAttempt(id, "charge_card", "call-1", 1200))
	h.Clock.Advance(compactHold - time.Millisecond)
	h.CatchUp()
	assert.Equal(t, 1, pt.set.Len(), "a piece arriving after the sweep waits compactHold")
	h.Clock.Advance(time.Millisecond)
	h.CatchUp()
	assert.Equal(t, 3, pt.packedSpans)
	h.Conservation()
}

// TestNoAgingUnderAShortDecisionWait: with decision_wait no longer than compactHold a
// trace waiting for its root is decided before it could age: it is never queued, packed
// or compacted.
func TestNoAgingUnderAShortDecisionWait(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.DecisionWait = compactHold
	h := newHarness(t, cfg, nil, WithSynchronous())
	h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(1), "lookup")))
	sh := h.buffer.shards[0]
	assert.Zero(t, sh.aging.Len(), "not queued")
	n, shared := internedShare(sh, sh.traces[buffertest.TraceID(1)])
	require.Positive(t, n)
	assert.Zero(t, shared, "held as it came")
	h.Clock.Advance(compactHold)
	h.CatchUp()
	assert.NotContains(t, sh.traces, buffertest.TraceID(1), "decided at decision_wait")
	h.Conservation()
}
