package retrystormprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// Packing: a trace settled clean on its root's arrival that may wait compactHold or more is
// held encoded until its decision.

// longGraceConfig holds rooted traces long enough to be packed; clean traces are dropped.
func longGraceConfig() *Config {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.RootGrace = 10 * time.Second
	cfg.Sampling.CleanPercent = 0
	return cfg
}

func heldTrace(h *harness, id pcommon.TraceID) *pendingTrace {
	h.t.Helper()
	h.settle()
	pt, ok := h.p.shards[0].traces[id]
	require.True(h.t, ok, "the trace is buffered")
	return pt
}

// TestOnlyTracesThatMayWaitArePacked: under a long root_grace a clean whole trace is held
// encoded, its OTLP size and span count accounted as before; under the default 2s it is
// held as it came; a storm is never packed.
func TestOnlyTracesThatMayWaitArePacked(t *testing.T) {
	h := newHarness(t, longGraceConfig(), nil)
	h.consume(cleanTrace(traceID(1), "lookup", "quote"))
	h.consume(stormTrace(traceID(2)))
	clean := heldTrace(h, traceID(1))
	require.NotNil(t, clean.packed, "settled clean, packed")
	assert.Zero(t, clean.set.Len(), "nothing decoded is held")
	assert.Nil(t, clean.arrivals)
	assert.Equal(t, 3, clean.held())
	assert.Equal(t, pieceSize(cleanTrace(traceID(1), "lookup", "quote")), int64(len(clean.packed)), "the encoding is the OTLP size")
	assert.Nil(t, heldTrace(h, traceID(2)).packed, "a storm is analysed at its decision, as it came")
	want := pieceSize(cleanTrace(traceID(1), "lookup", "quote")) + pieceSize(stormTrace(traceID(2)))
	assert.Equal(t, want, h.sum(metadata.MetricBufferedBytes))
	assert.EqualValues(t, 3+4, h.sum(metadata.MetricBufferedSpans))

	short := newHarness(t, func() *Config { c := longGraceConfig(); c.RootGrace = 2 * time.Second; return c }(), nil)
	short.consume(cleanTrace(traceID(1), "lookup"))
	assert.Nil(t, heldTrace(short, traceID(1)).packed, "decided within 2s: held as it came")

	h.advance(10 * time.Second)
	got := sinkSpans(h.sink)
	assert.NotContains(t, got, traceID(1), "dropped without being decoded again")
	assert.Len(t, got[traceID(2)], 4)
	h.conservation()
}

// TestAPackedTraceSamplingKeepsLeavesWhole: a packed trace that sampling keeps is decoded,
// analysed, annotated and forwarded with every span, id, attribute, resource and scope it
// came with.
func TestAPackedTraceSamplingKeepsLeavesWhole(t *testing.T) {
	cfg := longGraceConfig()
	cfg.Hashing.RedactPayloads = false
	cfg.Sampling.Tools = map[string]ToolSamplingConfig{"charge_card": {CleanPercent: 100}}
	h := newHarness(t, cfg, nil)
	h.consume(cleanTrace(traceID(1), "charge_card", "lookup"))
	require.NotNil(t, heldTrace(h, traceID(1)).packed)
	h.advance(10 * time.Second)

	want := cleanTrace(traceID(1), "charge_card", "lookup")
	got := sinkSpans(h.sink)[traceID(1)]
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
	rs := h.sink.AllTraces()[0].ResourceSpans().At(0)
	assert.Equal(t, "checkout-agent", rs.Resource().Attributes().AsRaw()["service.name"])
	assert.Equal(t, "agent-sdk", rs.ScopeSpans().At(0).Scope().Name())
	assert.EqualValues(t, 1, h.sum(metadata.MetricTraces, attribute.String("decision", "kept"), attribute.String("reason", "clean")))
	assert.EqualValues(t, 2, h.sum(metadata.MetricToolAttempts), "counted once")
	h.conservation()
}

// TestAStragglerUnpacksAPackedTrace: a span arriving after a packed trace's root is decided
// with the whole trace: here a second attempt makes the packed clean trace a storm.
func TestAStragglerUnpacksAPackedTrace(t *testing.T) {
	h := newHarness(t, longGraceConfig(), nil)
	h.consume(chargeCardTrace(traceID(1), false))
	require.NotNil(t, heldTrace(h, traceID(1)).packed)

	h.consume(lateAttempt(traceID(1), "charge_card", "call-1", 900))
	pt := heldTrace(h, traceID(1))
	assert.Nil(t, pt.packed, "decoded again with the straggler")
	assert.Equal(t, 3, pt.set.Len())
	assert.Len(t, pt.arrivals, 3, "every span noted again")

	h.advance(10 * time.Second)
	assert.Len(t, sinkSpans(h.sink)[traceID(1)], 3)
	assert.EqualValues(t, 1, h.sum(metadata.MetricTraces, attribute.String("reason", "storm")))
	h.conservation()
}

// TestPackedTracesUnderPressureAndAtShutdown: memory pressure and shutdown decide packed
// traces from their verdicts, without decoding them: each trace's bytes are made
// undecodable once it is packed, and no decoding is attempted.
func TestPackedTracesUnderPressureAndAtShutdown(t *testing.T) {
	cfg := longGraceConfig()
	one := pieceSize(cleanTrace(traceID(0), "lookup"))
	cfg.MaxBufferedBytes = 3 * one
	h := newHarness(t, cfg, nil, withSynchronous())
	for i := range 10 {
		h.consume(cleanTrace(traceID(uint64(i)), "lookup"))
		pt, ok := h.p.shards[0].traces[traceID(uint64(i))]
		require.True(t, ok)
		require.NotNil(t, pt.packed)
		pt.packed = []byte{0xff, 0xff, 0xff}
	}
	assert.LessOrEqual(t, h.sum(metadata.MetricBufferedBytes), cfg.MaxBufferedBytes)
	assert.Positive(t, h.sum(metadata.MetricEarlyDecisions, causeAttr(causeMemoryPressure)))
	require.NoError(t, h.shutdown(t.Context()))
	assert.Empty(t, sinkSpans(h.sink))
	assert.EqualValues(t, 20, h.sum(metadata.MetricSpansDropped, causeAttr(dropSampledOut)), "a root and a call each")
	assert.EqualValues(t, 10, h.sum(metadata.MetricToolAttempts))
	assert.Zero(t, h.sum(metadata.MetricSpansDropped, causeAttr(dropUnpackError)), "nothing was decoded")
	h.conservation()
}

// TestAPackedTraceThatCannotBeDecodedIsCounted: bytes pack wrote always decode; were they
// not to, the spans are counted as dropped (unpack_error), never lost silently.
func TestAPackedTraceThatCannotBeDecodedIsCounted(t *testing.T) {
	cfg := longGraceConfig()
	cfg.Sampling.Tools = map[string]ToolSamplingConfig{"charge_card": {CleanPercent: 100}}
	h := newHarness(t, cfg, nil, withSynchronous())
	h.consume(cleanTrace(traceID(1), "charge_card"))
	h.consume(cleanTrace(traceID(3), "lookup"))
	for _, id := range []pcommon.TraceID{traceID(1), traceID(3)} {
		pt := h.p.shards[0].traces[id]
		require.NotNil(t, pt.packed)
		pt.packed = []byte{0xff, 0xff, 0xff}
	}
	// A straggler of trace 3 meets its undecodable spans on arrival.
	h.consume(lateAttempt(traceID(3), "lookup", "call-7", 900))
	assert.EqualValues(t, 2, h.sum(metadata.MetricSpansDropped, causeAttr(dropUnpackError)))
	h.conservation()
	// Trace 1, which sampling keeps, meets its own at the decision.
	h.clock.Advance(10 * time.Second)
	h.consume(cleanTrace(traceID(2), "lookup")) // synchronous: an arrival decides what is due
	assert.NotContains(t, sinkSpans(h.sink), traceID(1))
	assert.EqualValues(t, 4, h.sum(metadata.MetricSpansDropped, causeAttr(dropUnpackError)))
	h.conservation()
}
