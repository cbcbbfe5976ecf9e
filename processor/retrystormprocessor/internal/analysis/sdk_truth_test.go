package analysis

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// TestRealSDKCapturesMatchTheirGroundTruth analyses every capture that carries a ground
// truth (testdata/sdk/README.md, "expect") with the default configuration and holds the
// result to it: logical calls and their attempts and statuses, the record units with
// storm, layer and class, the agent span each call is charged to, the findings, the spans
// whose status is remapped, and the trace's sampling reason. Triage must never call such
// a trace clean when the analysis does not.
func TestRealSDKCapturesMatchTheirGroundTruth(t *testing.T) {
	checked := 0
	for _, name := range fixtures.CaptureNames() {
		requests, truth := fixtures.LoadCapture(t, name)
		if truth.Expect == nil {
			continue
		}
		checked++
		t.Run(name, func(t *testing.T) {
			want := *truth.Reportable(name)
			td := ptrace.NewTraces()
			for _, r := range requests {
				r.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
			}
			an := New(DefaultConfig(), nil, stalecache.New(100))
			got := an.Analyze(td)
			units, err := truth.Units(want)
			require.NoError(t, err)
			matchCalls(t, got, want)
			matchUnits(t, got, units)
			reason := reasonOf(got.Signals)
			assert.Equal(t, want.SamplingReason(units), reason, "sampling reason")
			if q := New(DefaultConfig(), nil, stalecache.New(100)).Triage(td); q.Clean {
				assert.Equal(t, "clean", reason, "triage called a %s trace clean", reason)
			}
		})
	}
	assert.GreaterOrEqual(t, checked, 11, "captures with a ground truth")
}

func matchCalls(t *testing.T, got *Trace, want fixtures.CaptureExpect) {
	t.Helper()
	var calls []string
	for _, u := range got.Units {
		for _, c := range u.Calls {
			var statuses []string
			for _, a := range c.Attempts {
				statuses = append(statuses, fixtures.TruthStatus(a.Status.String()))
			}
			calls = append(calls, c.Last().ToolName+" "+jsonOf(statuses))
		}
	}
	var wantCalls []string
	for _, c := range want.Calls {
		wantCalls = append(wantCalls, want.ToolName(c)+" "+jsonOf(c.SpanStatuses()))
	}
	assert.Equal(t, wantCalls, calls, "logical calls in start order: tool and attempt statuses")
	assert.Equal(t, want.Remaps(), got.Remaps, "failed attempts whose span did not say ERROR are remapped")
	var agents []string
	for _, a := range want.AgentSpans {
		agents = append(agents, a.Name)
	}
	require.NotEmpty(t, agents)
	for _, u := range got.Units {
		for _, a := range u.Attempts() {
			require.GreaterOrEqual(t, a.Agent, int32(0), "%s has an agent", a.ToolName)
			assert.Equal(t, agents[0], got.Tree.Nodes[a.Agent].Span.Name(), "%s is charged to the nearest agent span", a.ToolName)
		}
	}
}

func matchUnits(t *testing.T, got *Trace, units []fixtures.ExpectedUnit) {
	t.Helper()
	type unitView struct {
		Attempts int
		Statuses []string
		Storm    bool
		Layer    stormrecord.Layer
		Class    string
		Findings []string
		Record   bool
	}
	var gotUnits, wantUnits []unitView
	for _, u := range got.Units {
		var statuses []string
		for _, a := range u.Attempts() {
			statuses = append(statuses, fixtures.TruthStatus(a.Status.String()))
		}
		var kinds []string
		for _, f := range u.Findings {
			kinds = append(kinds, f.Kind)
		}
		gotUnits = append(gotUnits, unitView{len(statuses), statuses, u.Storm, u.Layer, string(u.Class), kinds, u.Record != nil})
	}
	for _, u := range units {
		wantUnits = append(wantUnits, unitView{len(u.Statuses), u.Statuses, u.Storm(), u.Layer(), u.Class(), u.Findings(), u.Recorded()})
	}
	assert.Equal(t, wantUnits, gotUnits, "record units")
	var traceKinds []string
	for _, f := range got.Findings {
		traceKinds = append(traceKinds, f.Kind)
	}
	var wantKinds []string
	for _, u := range wantUnits {
		wantKinds = append(wantKinds, u.Findings...)
	}
	assert.Equal(t, wantKinds, traceKinds, "findings of the trace")
	for i, u := range got.Units {
		if i < len(units) && u.Record != nil && units[i].Storm() {
			assert.Equal(t, len(units[i].Sends), u.Record.Layers.Transport, "sends recorded")
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
