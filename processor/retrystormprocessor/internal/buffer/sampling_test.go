package buffer

import (
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

func TestStormTraceKeptWholeAndAnnotated(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	id := buffertest.TraceID(42)
	td := buffertest.StormTrace(id)
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceState().FromRaw("vendor=x")
	h.Consume(td)
	h.Advance(1999 * time.Millisecond)
	require.Zero(t, h.Sink.SpanCount(), "held for root_grace after the root arrived")
	h.Advance(time.Millisecond)

	spans := buffertest.SinkSpans(h.Sink)[id]
	require.Len(t, spans, 4, "root and three attempts, kept whole")
	var attempts int
	for _, s := range spans {
		attrs := s.Attributes()
		if s.ParentSpanID().IsEmpty() {
			assert.Equal(t, "storm", attrs.AsRaw()[stormrecord.AttrSampling])
			assert.EqualValues(t, 1, attrs.AsRaw()[stormrecord.AttrTraceStorms])
			assert.Equal(t, "vendor=x", s.TraceState().AsRaw(), "a storm kept at 100% keeps its tracestate")
			continue
		}
		attempts++
		raw := attrs.AsRaw()
		assert.Equal(t, "call-1", raw[stormrecord.AttrCallKey])
		assert.EqualValues(t, 3, raw[stormrecord.AttrCallAttempts])
		assert.Equal(t, true, raw[stormrecord.AttrCallStorm])
		assert.Equal(t, "transient_dependency", raw[stormrecord.AttrCallClass])
		assert.NotEmpty(t, raw[stormrecord.AttrArgsHash])
		assert.NotContains(t, raw, "gen_ai.tool.call.arguments", "raw payloads are redacted")
		assert.Empty(t, s.TraceState().AsRaw())
		if raw[stormrecord.AttrCallAttempt] == int64(3) {
			assert.Contains(t, raw, stormrecord.AttrCallSummary, "the summary travels on the last attempt")
		}
	}
	assert.Equal(t, 3, attempts)
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("decision", "kept"), attribute.String("reason", "storm")))
	h.Conservation()
}

// consistentKeep is the rule of OpenTelemetry consistent probability sampling, computed
// here straight from pkg/sampling: keep when the threshold passes the id's randomness.
func consistentKeep(t *testing.T, pct float64, id pcommon.TraceID) (bool, sampling.Threshold) {
	th, err := sampling.ProbabilityToThresholdWithPrecision(pct/100, 4)
	require.NoError(t, err)
	return th.ShouldSample(sampling.TraceIDToRandomness(id)), th
}

func TestCleanTracesFollowTheConsistentRule(t *testing.T) {
	const n = 20_000
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	want := map[pcommon.TraceID]bool{}
	var th sampling.Threshold
	for i := range n {
		id := buffertest.TraceID(uint64(i))
		h.Consume(buffertest.CleanTrace(id, "lookup"))
		var keep bool
		if keep, th = consistentKeep(t, 5, id); keep {
			want[id] = true
		}
	}
	h.Advance(2 * time.Second)

	got := buffertest.SinkSpans(h.Sink)
	require.Len(t, got, len(want), "kept exactly the traces the threshold selects")
	for id, spans := range got {
		require.Truef(t, want[id], "trace %s kept but the rule drops it", id)
		require.Len(t, spans, 2)
		for _, s := range spans {
			assert.Equal(t, "ot=th:"+th.TValue(), s.TraceState().AsRaw(), "kept clean spans carry the threshold")
		}
	}
	assert.InDelta(t, n*0.05, len(want), n*0.01, "the fixed ids are spread like real ones")
	assert.EqualValues(t, len(want), h.Sum(metadata.MetricTraces, attribute.String("decision", "kept"), attribute.String("reason", "clean")))
	assert.EqualValues(t, n-len(want), h.Sum(metadata.MetricTraces, attribute.String("decision", "dropped"), attribute.String("reason", "clean")))
	h.Conservation()
}

func TestPerToolCleanRates(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 10
	cfg.Sampling.Tools = map[string]sample.ToolConfig{
		"charge_card": {CleanPercent: 100},
		"search_docs": {CleanPercent: 0},
		"send_email":  {CleanPercent: 50},
	}
	h := newHarness(t, cfg, nil, WithSynchronous())
	cases := []struct {
		tools []string
		pct   float64
	}{
		{[]string{"lookup"}, 10},                      // no override: clean_percent
		{[]string{"charge_card"}, 100},                // raised
		{[]string{"search_docs"}, 0},                  // lowered
		{[]string{"search_docs", "charge_card"}, 100}, // the largest override wins
		{[]string{"send_email", "lookup"}, 50},        // an override replaces clean_percent
	}
	want := map[pcommon.TraceID]bool{}
	for c, tc := range cases {
		for i := range 2000 {
			id := buffertest.TraceID(uint64(c*100_000 + i))
			h.Consume(buffertest.CleanTrace(id, tc.tools...))
			if tc.pct == 0 {
				continue
			}
			if keep, _ := consistentKeep(t, tc.pct, id); keep {
				want[id] = true
			}
		}
	}
	h.Advance(2 * time.Second)
	got := buffertest.SinkSpans(h.Sink)
	assert.Len(t, got, len(want))
	for id := range got {
		assert.True(t, want[id])
	}
}

func TestIncomingThresholdIsRespected(t *testing.T) {
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	strict, _ := sampling.TValueToThreshold("fc") // 1/64, stricter than our 5%
	loose, _ := sampling.TValueToThreshold("8")   // 50%, looser than our 5%
	var strictIDs, looseIDs []pcommon.TraceID
	for i := uint64(0); len(strictIDs) < 50 || len(looseIDs) < 200; i++ {
		id := buffertest.TraceID(1_000_000 + i)
		rnd := sampling.TraceIDToRandomness(id)
		switch {
		case strict.ShouldSample(rnd) && len(strictIDs) < 50:
			strictIDs = append(strictIDs, id)
			h.Consume(withTraceState(buffertest.CleanTrace(id, "lookup"), "ot=th:fc"))
		case loose.ShouldSample(rnd) && !strict.ShouldSample(rnd) && len(looseIDs) < 200:
			looseIDs = append(looseIDs, id)
			h.Consume(withTraceState(buffertest.CleanTrace(id, "lookup"), "vendor=v1,ot=th:8"))
		}
	}
	h.Advance(2 * time.Second)
	got := buffertest.SinkSpans(h.Sink)
	for _, id := range strictIDs {
		require.Containsf(t, got, id, "an upstream 1/64 sample is inside our 5%%: kept")
		assert.Equal(t, "ot=th:fc", got[id][0].TraceState().AsRaw(), "never lowered")
	}
	for _, id := range looseIDs {
		keep, th := consistentKeep(t, 5, id)
		if spans, ok := got[id]; ok {
			assert.True(t, keep)
			assert.Equal(t, "ot=th:"+th.TValue()+",vendor=v1", spans[0].TraceState().AsRaw(), "raised to ours, other vendors kept")
		} else {
			assert.False(t, keep)
		}
	}
}

func TestExplicitRandomnessReplacesTraceID(t *testing.T) {
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	// rv ffffffffffffff passes any threshold; rv 00000000000000 passes only 100%.
	h.Consume(withTraceState(buffertest.CleanTrace(buffertest.TraceID(1), "lookup"), "ot=rv:ffffffffffffff"))
	h.Consume(withTraceState(buffertest.CleanTrace(buffertest.TraceID(2), "lookup"), "ot=rv:00000000000000"))
	h.Advance(2 * time.Second)
	got := buffertest.SinkSpans(h.Sink)
	assert.Contains(t, got, buffertest.TraceID(1))
	assert.NotContains(t, got, buffertest.TraceID(2))
}

func withTraceState(td ptrace.Traces, ts string) ptrace.Traces {
	for _, s := range tracespans.All(td) {
		s.TraceState().FromRaw(ts)
	}
	return td
}
