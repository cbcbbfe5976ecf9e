package buffer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// spanAttrs is each output span's attributes, status and tracestate, by span id: what the
// verdict wrote (annotations, remapped statuses, hashes, redaction, stamps).
func spanAttrs(tds []ptrace.Traces) map[pcommon.SpanID]map[string]any {
	out := map[pcommon.SpanID]map[string]any{}
	for _, s := range buffertest.AllSpans(mergeTraces(tds)) {
		m := s.Attributes().AsRaw()
		m["(status)"] = s.Status().Code().String()
		m["(tracestate)"] = s.TraceState().AsRaw()
		out[s.SpanID()] = m
	}
	return out
}

// TestReleasedTracesGetTheVerdictOfKeptOnes runs every real SDK capture through the buffer
// twice: buffering, keeping every trace (clean_percent 100), and released (`buffering:
// false`: the verdicts' Released mode and WithReleasedTraces). Released, each trace is decided in the step that brought it, with
// no time passing, and its spans come out annotated, remapped, hashed and redacted exactly
// as the kept trace's do; only the tracestate differs: a released trace was sampled
// before, so nothing is stamped on it.
func TestReleasedTracesGetTheVerdictOfKeptOnes(t *testing.T) {
	for _, name := range fixtures.CaptureNames() {
		t.Run(name, func(t *testing.T) {
			requests, _ := fixtures.LoadCapture(t, name)
			run := func(released bool) (*harness, []ptrace.Traces) {
				cfg := testConfig()
				cfg.Sampling.CleanPercent = 100
				cfg.Released = released
				h := newHarness(t, cfg, nil)
				whole := ptrace.NewTraces()
				for _, td := range requests {
					c := ptrace.NewTraces()
					td.CopyTo(c)
					c.ResourceSpans().MoveAndAppendTo(whole.ResourceSpans())
				}
				h.Consume(whole)
				if released {
					h.CatchUp() // no clock moves: nothing waits
				} else {
					h.Advance(testConfig().DecisionWait)
				}
				return h, h.Sink.AllTraces()
			}
			kept, keptOut := run(false)
			released, releasedOut := run(true)
			sent := 0
			for _, td := range requests {
				sent += td.SpanCount()
			}
			require.Equal(t, sent, released.Sink.SpanCount(), "every released span is forwarded at once")
			want, got := spanAttrs(keptOut), spanAttrs(releasedOut)
			require.Len(t, got, len(want))
			for id, w := range want {
				g := got[id]
				assert.NotContains(t, g["(tracestate)"], "th:", "nothing is stamped on a released trace")
				delete(w, "(tracestate)")
				for k, v := range w {
					assert.Equal(t, v, g[k], "span %s: %s", id, k)
				}
				for k := range g {
					_, ok := w[k]
					ok = ok || k == "(tracestate)"
					assert.True(t, ok, "span %s: %s is on the released span only", id, k)
				}
			}
			assert.Equal(t, kept.Sum(metadata.MetricTraces), released.Sum(metadata.MetricTraces))
			assert.Zero(t, released.Sum(metadata.MetricEarlyDecisions))
			assert.Equal(t, kept.Sum(metadata.MetricToolAttempts), released.Sum(metadata.MetricToolAttempts))
			assert.Equal(t, kept.Sum(metadata.MetricCalls), released.Sum(metadata.MetricCalls))
			released.Conservation()
		})
	}
}

// TestReleasedTraceLateSpansTakeTheLatePath: spans of a released trace that come after it
// are late spans of a kept trace, redacted of the payloads the trace carried.
func TestReleasedTraceLateSpansTakeTheLatePath(t *testing.T) {
	cfg := testConfig()
	cfg.Released = true
	h := newHarness(t, cfg, nil)
	id := buffertest.TraceID(5)
	h.Consume(buffertest.StormTrace(id))
	h.CatchUp()
	first := h.Sink.SpanCount()
	require.Equal(t, 4, first, "the trace is forwarded as it came")
	h.Consume(buffertest.LateAttempt(id, "charge_card", "call-1", 1200))
	h.CatchUp()
	assert.Equal(t, first+1, h.Sink.SpanCount())
	assert.EqualValues(t, 1, h.Sum(metadata.MetricLateSpans, attribute.String("decision", metadata.AttributeLateDecisionKept)))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces), "the trace is counted once")
	h.Conservation()
}
