package buffer

import (
	"encoding/json"
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

// staleTrace is buffertest.StaleRead.
func staleTrace(id pcommon.TraceID) ptrace.Traces { return buffertest.StaleRead(id) }

// summaries returns the call summaries on the spans of one trace, by the span's name.
func summaries(t *testing.T, spans []ptrace.Span) map[string][]stormrecord.Record {
	t.Helper()
	out := map[string][]stormrecord.Record{}
	for _, s := range spans {
		if r, ok := summaryOf(t, s); ok {
			out[s.Name()] = append(out[s.Name()], r)
		}
	}
	return out
}

// allSummaries returns the call summaries on the spans of one trace, in span order.
func allSummaries(t *testing.T, spans []ptrace.Span) []stormrecord.Record {
	t.Helper()
	var out []stormrecord.Record
	for _, s := range spans {
		if r, ok := summaryOf(t, s); ok {
			out = append(out, r)
		}
	}
	return out
}

// summaryOf decodes the call summary a span carries.
func summaryOf(t *testing.T, s ptrace.Span) (stormrecord.Record, bool) {
	t.Helper()
	var r stormrecord.Record
	v, ok := s.Attributes().Get(stormrecord.AttrCallSummary)
	if ok {
		require.NoError(t, json.Unmarshal([]byte(v.Str()), &r))
	}
	return r, ok
}

func kinds(r stormrecord.Record) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Kind)
	}
	return out
}

// TestStaleReadDecidedBeforeItsOriginal: the stale trace is decided, kept and forwarded
// before the trace whose result it copied arrives. When that trace is decided (dropped:
// clean), its result resolves the held suspect, and the finding reaches the records on a
// late-finding span: the call's record again, revision 2, with stale_cache_suspect. In
// the other order the finding is on the record at the decision, and no late span is sent.
func TestStaleReadDecidedBeforeItsOriginal(t *testing.T) {
	for _, staleFirst := range []bool{true, false} {
		name := map[bool]string{true: "stale read first", false: "original first"}[staleFirst]
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.NumShards = 8
			cfg.Sampling.CleanPercent = 0
			h := newHarness(t, cfg, nil)
			stale, original := buffertest.TraceID(2), buffertest.TraceID(1)
			if staleFirst {
				h.Consume(staleTrace(stale))
				h.Advance(2 * time.Second)
				require.Contains(t, buffertest.SinkSpans(h.Sink), stale, "kept for its storm before the original arrived")
				h.Consume(buffertest.ChargeCardTrace(original, false))
			} else {
				h.Consume(buffertest.ChargeCardTrace(original, false))
				h.Advance(2 * time.Second)
				h.Consume(staleTrace(stale))
			}
			h.Advance(2 * time.Second)

			got := summaries(t, buffertest.SinkSpans(h.Sink)[stale])
			require.Len(t, got["execute_tool charge_card"], 1)
			first := got["execute_tool charge_card"][0]
			assert.Equal(t, 1, first.Revision)
			assert.EqualValues(t, 1, h.Sum(metadata.MetricFindings, attribute.String("kind", "stale_cache_suspect")))
			if !staleFirst {
				assert.Contains(t, kinds(first), "stale_cache_suspect")
				assert.Empty(t, got[stormrecord.LateFindingSpan])
				assert.Zero(t, h.Sum(metadata.MetricLateFindings))
				h.Conservation()
				return
			}
			assert.NotContains(t, kinds(first), "stale_cache_suspect", "not known when the trace was decided")
			require.Len(t, got[stormrecord.LateFindingSpan], 1, "the finding found later, on a span of its own")
			late := got[stormrecord.LateFindingSpan][0]
			assert.Equal(t, first.ID, late.ID, "the same call's record")
			assert.Equal(t, 2, late.Revision)
			assert.Equal(t, first.Attempts, late.Attempts)
			assert.Equal(t, append(kinds(first), "stale_cache_suspect"), kinds(late))
			assert.True(t, late.Completeness().Beats(first.Completeness()), "a reader takes the revision")
			assert.Contains(t, late.Findings[len(late.Findings)-1].Detail, original.String())
			for _, s := range buffertest.SinkSpans(h.Sink)[stale] {
				if s.Name() == stormrecord.LateFindingSpan {
					assert.Equal(t, first.AttemptSpanIDs[1], s.ParentSpanID().String(), "under the attempt it concerns")
					assert.Equal(t, 1, s.Events().Len())
					assert.Equal(t, stormrecord.Sealed, stormrecord.NewSealer().Check(s), "the late-finding span is sealed")
				}
			}
			assert.EqualValues(t, 1, h.Sum(metadata.MetricLateFindings, attribute.String("outcome", "forwarded")))
			assert.EqualValues(t, 1, h.Sum(metadata.MetricStaleSuspects, attribute.String("outcome", "held")))
			assert.EqualValues(t, 1, h.Sum(metadata.MetricStaleSuspects, attribute.String("outcome", "resolved")))
			h.Conservation()
		})
	}
}

// TestSuspectTraceIsSampledForTheFindingItMayGet: with only divergences kept, a trace
// holding a suspect is kept (reason divergence) before its finding is known; the finding
// found later then lands. With divergences dropped too, the late finding meets a dropped
// trace: a miss, counted.
func TestSuspectTraceIsSampledForTheFindingItMayGet(t *testing.T) {
	for _, keepDivergence := range []float64{100, 0} {
		cfg := testConfig()
		cfg.Sampling.CleanPercent = 0
		keep := &cfg.Sampling.KeepPercent
		keep.Storm, keep.ToolError, keep.SpanError = 0, 0, 0
		keep.Divergence = keepDivergence
		h := newHarness(t, cfg, nil)
		h.Consume(staleTrace(buffertest.TraceID(2)))
		h.Advance(2 * time.Second)
		h.Consume(buffertest.ChargeCardTrace(buffertest.TraceID(1), false))
		h.Advance(2 * time.Second)
		if keepDivergence == 100 {
			assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("decision", "kept"), attribute.String("reason", "divergence")))
			assert.Len(t, summaries(t, buffertest.SinkSpans(h.Sink)[buffertest.TraceID(2)])[stormrecord.LateFindingSpan], 1)
			assert.EqualValues(t, 1, h.Sum(metadata.MetricLateFindings, attribute.String("outcome", "forwarded")))
		} else {
			assert.NotContains(t, buffertest.SinkSpans(h.Sink), buffertest.TraceID(2))
			assert.EqualValues(t, 1, h.Sum(metadata.MetricLateFindings, attribute.String("outcome", "trace_dropped")))
			assert.EqualValues(t, 1, h.Sum(metadata.MetricFindings, attribute.String("kind", "stale_cache_suspect")), "still a finding")
		}
		h.Conservation()
	}
}

// TestHeldSuspectExpires: the original arriving after recheck_window finds nothing held;
// the suspect is counted as expired. With recheck_window 0 nothing is held.
func TestHeldSuspectExpires(t *testing.T) {
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 0
	cfg.Divergence.StaleCache.RecheckWindow = 10 * time.Second
	h := newHarness(t, cfg, nil)
	h.Consume(staleTrace(buffertest.TraceID(2)))
	h.Advance(2 * time.Second)
	h.Advance(10 * time.Second)
	h.Advance(2 * time.Second)
	h.Consume(buffertest.ChargeCardTrace(buffertest.TraceID(1), false))
	h.Advance(2 * time.Second)
	assert.Empty(t, summaries(t, buffertest.SinkSpans(h.Sink)[buffertest.TraceID(2)])[stormrecord.LateFindingSpan])
	assert.EqualValues(t, 1, h.Sum(metadata.MetricStaleSuspects, attribute.String("outcome", "expired")))
	assert.Zero(t, h.Sum(metadata.MetricFindings, attribute.String("kind", "stale_cache_suspect")))

	cfg.Divergence.StaleCache.RecheckWindow = 0
	h = newHarness(t, cfg, nil)
	h.Consume(staleTrace(buffertest.TraceID(2)))
	h.Advance(2 * time.Second)
	h.Consume(buffertest.ChargeCardTrace(buffertest.TraceID(1), false))
	h.Advance(2 * time.Second)
	assert.Zero(t, h.Sum(metadata.MetricStaleSuspects, attribute.String("outcome", "held")))
	assert.Zero(t, h.Sum(metadata.MetricFindings, attribute.String("kind", "stale_cache_suspect")))
}
