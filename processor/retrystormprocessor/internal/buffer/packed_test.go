package buffer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

// Packing: a trace settled clean on its root's arrival that may wait compactHold or more is
// held encoded until its decision.

// longGraceConfig holds rooted traces long enough to be packed; clean traces are dropped.
func longGraceConfig() *testSetup {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.RootGrace = 10 * time.Second
	cfg.Sampling.CleanPercent = 0
	return cfg
}

func heldTrace(h *harness, id pcommon.TraceID) *testTrace {
	h.T.Helper()
	h.CatchUp()
	pt, ok := h.buffer.shards[0].traces[id]
	require.True(h.T, ok, "the trace is buffered")
	return pt
}

// TestOnlyTracesThatMayWaitArePacked: under a long root_grace a clean whole trace is held
// encoded and compressed, its OTLP size and span count accounted as before; under the default 2s it is
// held as it came; a storm is never packed.
func TestOnlyTracesThatMayWaitArePacked(t *testing.T) {
	h := newHarness(t, longGraceConfig(), nil)
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(1), "lookup", "quote"))
	h.Consume(buffertest.StormTrace(buffertest.TraceID(2)))
	clean := heldTrace(h, buffertest.TraceID(1))
	require.NotNil(t, clean.packed, "settled clean, packed")
	assert.Zero(t, clean.set.Len(), "nothing decoded is held")
	assert.Nil(t, clean.notes.Arrivals())
	assert.Equal(t, 3, clean.held())
	otlp := pieceSize(buffertest.CleanTrace(buffertest.TraceID(1), "lookup", "quote"))
	assert.Equal(t, otlp, packedSize(clean.packed), "the frames decompress to the OTLP encoding")
	assert.Less(t, int64(len(clean.packed)), otlp, "held compressed")
	assert.Nil(t, heldTrace(h, buffertest.TraceID(2)).packed, "a storm is analysed at its decision, as it came")
	want := pieceSize(buffertest.CleanTrace(buffertest.TraceID(1), "lookup", "quote")) + pieceSize(buffertest.StormTrace(buffertest.TraceID(2)))
	assert.Equal(t, want, h.Sum(metadata.MetricBufferedBytes))
	assert.EqualValues(t, 3+4, h.Sum(metadata.MetricBufferedSpans))

	short := newHarness(t, func() *testSetup { c := longGraceConfig(); c.RootGrace = 2 * time.Second; return c }(), nil)
	short.Consume(buffertest.CleanTrace(buffertest.TraceID(1), "lookup"))
	assert.Nil(t, heldTrace(short, buffertest.TraceID(1)).packed, "decided within 2s: held as it came")

	h.Advance(10 * time.Second)
	got := buffertest.SinkSpans(h.Sink)
	assert.NotContains(t, got, buffertest.TraceID(1), "dropped without being decoded again")
	assert.Len(t, got[buffertest.TraceID(2)], 4)
	h.Conservation()
}

// TestAPackedTraceSamplingKeepsLeavesWhole: a packed trace that sampling keeps is decoded,
// analysed, annotated and forwarded with every span, id, attribute, resource and scope it
// came with.
func TestAPackedTraceSamplingKeepsLeavesWhole(t *testing.T) {
	cfg := longGraceConfig()
	cfg.Hashing.RedactPayloads = false
	cfg.Sampling.Tools = map[string]sample.ToolConfig{"charge_card": {CleanPercent: 100}}
	h := newHarness(t, cfg, nil)
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(1), "charge_card", "lookup"))
	require.NotNil(t, heldTrace(h, buffertest.TraceID(1)).packed)
	h.Advance(10 * time.Second)

	want := buffertest.CleanTrace(buffertest.TraceID(1), "charge_card", "lookup")
	got := buffertest.SinkSpans(h.Sink)[buffertest.TraceID(1)]
	require.Len(t, got, 3)
	byID := map[pcommon.SpanID]ptrace.Span{}
	for _, s := range got {
		byID[s.SpanID()] = s
	}
	for _, s := range tracespans.All(want) {
		out, ok := byID[s.SpanID()]
		require.True(t, ok, "span %s forwarded", s.Name())
		assert.Equal(t, s.Name(), out.Name())
		assert.Equal(t, s.ParentSpanID(), out.ParentSpanID())
		assert.Equal(t, s.StartTimestamp(), out.StartTimestamp())
		assert.Equal(t, s.EndTimestamp(), out.EndTimestamp())
		for k, v := range s.Attributes().All() {
			o, ok := out.Attributes().Get(k)
			require.True(t, ok, "attribute %s of %s kept", k, s.Name())
			assert.Equal(t, v.AsRaw(), o.AsRaw())
		}
	}
	rs := h.Sink.AllTraces()[0].ResourceSpans().At(0)
	assert.Equal(t, "checkout-agent", rs.Resource().Attributes().AsRaw()["service.name"])
	assert.Equal(t, "agent-sdk", rs.ScopeSpans().At(0).Scope().Name())
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("decision", "kept"), attribute.String("reason", "clean")))
	assert.EqualValues(t, 2, h.Sum(metadata.MetricToolAttempts), "counted once")
	h.Conservation()
}

// TestAStragglerVoidsAPackedTracesVerdict: a span arriving after a packed trace's root is
// held beside the packed spans, and the decision reads the whole trace: here a second
// attempt makes the packed clean trace a storm.
func TestAStragglerVoidsAPackedTracesVerdict(t *testing.T) {
	h := newHarness(t, longGraceConfig(), nil)
	h.Consume(buffertest.ChargeCardTrace(buffertest.TraceID(1), false))
	require.NotNil(t, heldTrace(h, buffertest.TraceID(1)).packed)

	h.Consume(buffertest.LateAttempt(buffertest.TraceID(1), "charge_card", "call-1", 900))
	pt := heldTrace(h, buffertest.TraceID(1))
	assert.False(t, pt.notes.Settled(), "the verdict is void")
	assert.NotNil(t, pt.packed, "not decoded before it must be read")
	assert.Equal(t, 1, pt.set.Len())
	assert.Len(t, pt.notes.Arrivals(), 1, "the straggler is noted")
	assert.Equal(t, 3, pt.held())

	h.Advance(10 * time.Second)
	assert.Len(t, buffertest.SinkSpans(h.Sink)[buffertest.TraceID(1)], 3)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("reason", "storm")))
	h.Conservation()
}

// rootOf is trace id's root span alone, as the builders make it.
func rootOf(id pcommon.TraceID) ptrace.Traces {
	b := buffertest.NewSpanBuilder(id)
	b.Root()
	return b.Traces
}

// TestAWaitingTraceIsPackedAsItAges: the spans of a trace waiting for its root are packed
// compactHold after they arrive, piece by piece, and decoded whole, in arrival order, when
// the root arrives: the decision and what is forwarded are those of the same spans never
// packed.
func TestAWaitingTraceIsPackedAsItAges(t *testing.T) {
	id := buffertest.TraceID(1)
	run := func(gap time.Duration) (*harness, map[pcommon.TraceID][]ptrace.Span) {
		cfg := testConfig()
		cfg.NumShards = 1
		h := newHarness(t, cfg, nil)
		pieces := []ptrace.Traces{
			buffertest.WithoutRoot(buffertest.ChargeCardTrace(id, false)),
			buffertest.LateAttempt(id, "charge_card", "call-1", 900),
			rootOf(id),
		}
		for i, td := range pieces {
			h.Consume(td)
			pt := heldTrace(h, id)
			if gap >= compactHold && i < 2 {
				assert.Equal(t, 1, pt.set.Len(), "piece %d held as it came at first", i)
				h.Advance(gap)
				pt = heldTrace(h, id)
				assert.Zero(t, pt.set.Len(), "piece %d packed as it aged", i)
				assert.Equal(t, i+1, pt.packedSpans)
				assert.Nil(t, pt.notes.Arrivals())
			}
		}
		pt := heldTrace(h, id)
		assert.Nil(t, pt.packed, "the root's arrival decodes the trace")
		assert.Equal(t, 3, pt.set.Len())
		require.Len(t, pt.notes.Arrivals(), 3)
		i := 0
		for _, span := range pt.set.All() {
			assert.Equal(t, span.SpanID(), pt.notes.Arrivals()[i].ID, "the notes follow the spans")
			i++
		}
		h.Advance(2 * time.Second)
		h.Conservation()
		return h, buffertest.SinkSpans(h.Sink)
	}
	aged, agedOut := run(compactHold)
	fresh, freshOut := run(0)
	require.Len(t, agedOut[id], 3)
	for i, span := range agedOut[id] {
		want := freshOut[id][i]
		assert.Equal(t, want.SpanID(), span.SpanID(), "forwarded in the same order")
		assert.Equal(t, want.Attributes().AsRaw(), span.Attributes().AsRaw())
		assert.Equal(t, want.Status().Code(), span.Status().Code())
	}
	storm := attribute.String("reason", "storm")
	assert.EqualValues(t, 1, aged.Sum(metadata.MetricTraces, storm))
	assert.EqualValues(t, 1, fresh.Sum(metadata.MetricTraces, storm))
}

// TestAPackedWaitingTraceIsDecidedWhole: a trace whose root never arrives is decided at
// decision_wait from every span, the packed ones decoded: two attempts of one call make it
// a storm.
func TestAPackedWaitingTraceIsDecidedWhole(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	h := newHarness(t, cfg, nil)
	h.Consume(buffertest.WithoutRoot(buffertest.ChargeCardTrace(buffertest.TraceID(1), false, false)))
	h.Advance(compactHold)
	require.NotNil(t, heldTrace(h, buffertest.TraceID(1)).packed)
	h.Advance(cfg.DecisionWait)
	assert.Len(t, buffertest.SinkSpans(h.Sink)[buffertest.TraceID(1)], 2)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("reason", "storm")))
	h.Conservation()
}

// TestPackedTracesUnderPressureAndAtShutdown: memory pressure and shutdown decide packed
// traces from their verdicts, without decoding them: each trace's bytes are made
// undecodable once it is packed, and no decoding is attempted.
func TestPackedTracesUnderPressureAndAtShutdown(t *testing.T) {
	cfg := longGraceConfig()
	one := pieceSize(buffertest.CleanTrace(buffertest.TraceID(0), "lookup"))
	cfg.MaxBufferedBytes = 3 * one
	h := newHarness(t, cfg, nil, WithSynchronous())
	for i := range 10 {
		h.Consume(buffertest.CleanTrace(buffertest.TraceID(uint64(i)), "lookup"))
		pt, ok := h.buffer.shards[0].traces[buffertest.TraceID(uint64(i))]
		require.True(t, ok)
		require.NotNil(t, pt.packed)
		pt.packed = []byte{0xff, 0xff, 0xff}
	}
	assert.LessOrEqual(t, h.Sum(metadata.MetricBufferedBytes), cfg.MaxBufferedBytes)
	assert.Positive(t, h.Sum(metadata.MetricEarlyDecisions, causeAttr(CauseMemoryPressure)))
	require.NoError(t, h.Shutdown(t.Context()))
	assert.Empty(t, buffertest.SinkSpans(h.Sink))
	assert.EqualValues(t, 20, h.Sum(metadata.MetricSpansDropped, causeAttr(DropSampledOut)), "a root and a call each")
	assert.EqualValues(t, 10, h.Sum(metadata.MetricToolAttempts))
	assert.Zero(t, h.Sum(metadata.MetricSpansDropped, causeAttr(DropUnpackError)), "nothing was decoded")
	h.Conservation()
}

// TestAPackedTraceThatCannotBeDecodedIsCounted: bytes pack wrote always decode; were they
// not to, the spans are counted as dropped (unpack_error), never lost silently, wherever
// they are decoded: at a root's arrival, at a decision that reads a trace a straggler
// voided, and at a decision to keep.
func TestAPackedTraceThatCannotBeDecodedIsCounted(t *testing.T) {
	cfg := longGraceConfig()
	cfg.Sampling.Tools = map[string]sample.ToolConfig{"charge_card": {CleanPercent: 100}}
	h := newHarness(t, cfg, nil, WithSynchronous())
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(1), "charge_card"))
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(3), "lookup"))
	h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(4), "lookup")))
	h.Clock.Advance(compactHold)
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(5), "lookup")) // synchronous: an arrival ages what is due
	for _, id := range []pcommon.TraceID{buffertest.TraceID(1), buffertest.TraceID(3), buffertest.TraceID(4)} {
		pt := h.buffer.shards[0].traces[id]
		require.NotNil(t, pt.packed)
		pt.packed = []byte{0xff, 0xff, 0xff}
	}
	// Trace 4's root meets its undecodable spans on arrival.
	h.Consume(rootOf(buffertest.TraceID(4)))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricSpansDropped, causeAttr(DropUnpackError)))
	// A straggler of trace 3 is held beside its spans.
	h.Consume(buffertest.LateAttempt(buffertest.TraceID(3), "lookup", "call-7", 900))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricSpansDropped, causeAttr(DropUnpackError)))
	h.Conservation()
	// Trace 3 meets them at its decision, and trace 1, which sampling keeps, at its own.
	h.Clock.Advance(10 * time.Second)
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(2), "lookup")) // an arrival decides what is due
	assert.NotContains(t, buffertest.SinkSpans(h.Sink), buffertest.TraceID(1))
	assert.EqualValues(t, 5, h.Sum(metadata.MetricSpansDropped, causeAttr(DropUnpackError)))
	h.Conservation()
}

// TestNothingIsPackedThatIsDecidedSoon: spans are made compact only when their trace will
// wait compactHold or more: a root arriving when decision_wait is nearly over, or a piece
// aging then, leaves the trace as it is, while the same arrivals earlier are packed.
func TestNothingIsPackedThatIsDecidedSoon(t *testing.T) {
	for _, tc := range []struct {
		name   string
		late   time.Duration // after the first piece
		packed bool
	}{
		{"with time to wait", 20 * time.Second, true},
		{"moments before decision_wait", 26 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := longGraceConfig() // root_grace 10s, decision_wait 30s
			id := buffertest.TraceID(1)
			// The root arrives late: settled, packed only with compactHold left.
			h := newHarness(t, cfg, nil)
			h.Consume(buffertest.WithoutRoot(buffertest.ChargeCardTrace(id, false)))
			h.Advance(tc.late)
			h.Consume(rootOf(id))
			pt := heldTrace(h, id)
			require.True(t, pt.notes.Settled())
			assert.Equal(t, tc.packed, pt.packed != nil, "settled trace packed")
			h.Conservation()

			// A piece arrives late and ages: packed only with compactHold left.
			g := newHarness(t, cfg, nil)
			g.Consume(buffertest.WithoutRoot(buffertest.ChargeCardTrace(id, false)))
			g.Advance(tc.late - compactHold)
			g.Consume(buffertest.LateAttempt(id, "charge_card", "call-2", 900))
			g.Advance(compactHold) // the first piece aged long ago; the second ages now
			pt = heldTrace(g, id)
			assert.Equal(t, tc.packed, pt.set.Len() == 0, "the late piece packed")
			g.Conservation()
		})
	}
}

// TestPackScratchOfAHugeTraceIsLetGo: a shard keeps its pack and unpack scratch space
// between traces, but not the size of the largest trace it packed.
func TestPackScratchOfAHugeTraceIsLetGo(t *testing.T) {
	assert.Nil(t, keepScratch(make([]byte, 10, maxScratch+1)))
	kept := keepScratch(make([]byte, 10, 4096))
	assert.Empty(t, kept)
	assert.Equal(t, 4096, cap(kept))
}
