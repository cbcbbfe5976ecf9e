package retrystormprocessor

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decision"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
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
				h.consume(cutTrace(agenttraffic.TraceToPdata(&traces[i]), piece))
			}
			if aged && piece < 2 {
				h.advance(compactHold)
				for _, pt := range h.p.shards[0].traces {
					if pt.packed != nil {
						packed++
					}
				}
			}
		}
		if aged {
			require.Positive(t, packed, "pieces waited long enough to be packed")
		}
		h.advance(cfg.RootGrace)
		assert.Zero(t, h.sum(metadata.MetricBufferedSpans), "every trace decided")
		h.conservation()
		return h, forwardedSpans(h.sink.AllTraces())
	}
	aged, agedOut := run(true)
	fresh, freshOut := run(false)

	require.NotEmpty(t, freshOut)
	assert.Equal(t, freshOut, agedOut, "the same spans forwarded, attribute for attribute")
	for _, d := range []string{decisionKept, decisionDropped} {
		for _, r := range append(decision.SignalReasons[:], decision.ReasonClean) {
			set := []attribute.KeyValue{attribute.String("decision", d), attribute.String("reason", r)}
			assert.Equal(t, fresh.sum(metadata.MetricTraces, set...), aged.sum(metadata.MetricTraces, set...), "traces %s for %s", d, r)
		}
	}
	for _, r := range []string{decision.ReasonStorm, decision.ReasonToolError, decision.ReasonDivergence} {
		assert.Positive(t, fresh.sum(metadata.MetricTraces, attribute.String("reason", r)), "traces kept for %s", r)
	}
	assert.Positive(t, fresh.sum(metadata.MetricTraces, attribute.String("decision", decisionDropped)))
	for _, m := range []string{metadata.MetricFindings, metadata.MetricToolAttempts, metadata.MetricCalls,
		metadata.MetricStormCalls, metadata.MetricStatusRemapped, metadata.MetricSpansDropped} {
		assert.Equal(t, fresh.sum(m), aged.sum(m), m)
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
