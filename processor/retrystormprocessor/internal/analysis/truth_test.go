package analysis

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// TestGeneratedTrafficMatchesGroundTruth analyses agentsim's traffic, every scenario in
// every shape that can express it, and holds each trace's records and findings to the
// ground truth the generator wrote independently.
func TestGeneratedTrafficMatchesGroundTruth(t *testing.T) {
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 7, EveryScenario: true, Scenarios: agenttraffic.DefaultScenarioWeights()})
	require.NoError(t, err)
	an := New(DefaultConfig(), nil, stalecache.New(1000))
	traces := gen.Generate(400)
	for i := range traces {
		tr := &traces[i]
		matchGroundTruth(t, an, tr, fmt.Sprintf("trace %d %s/%s", i, tr.Truth.Shape, tr.Truth.Scenario))
	}
}

// TestEveryScenarioShapeMatchesGroundTruth holds a few traces of each scenario, in each
// shape that can express it, to the ground truth: the realistic mix above leaves some
// scenarios out of its weighted draws, and draws shapes at random.
func TestEveryScenarioShapeMatchesGroundTruth(t *testing.T) {
	combos := 0
	for _, sc := range agenttraffic.AllScenarios() {
		shapes := 0
		for _, shape := range agenttraffic.AllShapes() {
			gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 17, Shapes: []agenttraffic.Shape{shape},
				Scenarios: agenttraffic.ScenarioWeights{sc: 1}})
			if err != nil {
				// The shape cannot express the scenario; Validate says which can.
				continue
			}
			shapes++
			an := New(DefaultConfig(), nil, stalecache.New(1000))
			traces := gen.Generate(3)
			for i := range traces {
				tr := &traces[i]
				matchGroundTruth(t, an, tr, fmt.Sprintf("%s/%s trace %d", sc, shape, i))
			}
		}
		assert.NotZero(t, shapes, "%s: no shape expresses it", sc)
		combos += shapes
	}
	assert.Greater(t, combos, 2*len(agenttraffic.AllScenarios()))
}

// matchGroundTruth analyses one generated trace and holds its records and findings to the
// truth the generator wrote.
func matchGroundTruth(t *testing.T, an *Analyzer, tr *agenttraffic.Trace, label string) {
	t.Helper()
	got := an.Analyze(agenttraffic.TraceToPdata(tr))
	assert.Equal(t, tr.Truth.Calls, got.Calls, label+": calls")
	assert.Equal(t, string(tr.Truth.Reason), reasonOf(got.Signals), label+": reason")
	assert.Equal(t, sortedKinds(tr.Truth.Findings), sortedFindingKinds(got), label+": findings")
	var records []*Unit
	for _, u := range got.Units {
		if u.Record != nil {
			records = append(records, u)
		}
	}
	if !assert.Len(t, records, len(tr.Truth.Records), label+": records") {
		return
	}
	for j, want := range tr.Truth.Records {
		r := records[j].Record
		if want.CallKey != "" {
			assert.Equal(t, want.CallKey, r.CallKey, label)
		}
		assert.Equal(t, want.Attempts, r.Attempts, label+": attempts")
		assert.Equal(t, want.Layer, r.Layer, label+": layer")
		assert.Equal(t, want.Layers, r.Layers, label+": layers")
		assert.Equal(t, want.Storm, r.Storm, label+": storm")
		assert.Equal(t, string(want.Class), deref(r.Class), label+": class")
		assert.Equal(t, statusStrings(want.Statuses), r.Statuses, label+": statuses")
		assert.Equal(t, want.IncompleteAttempts, r.IncompleteAttempts, label+": incomplete")
	}
}

func reasonOf(s Signals) string {
	switch {
	case s.Storm:
		return "storm"
	case s.ToolError:
		return "tool_error"
	case s.Divergence:
		return "divergence"
	case s.SpanError:
		return "span_error"
	case s.Incomplete:
		return "incomplete"
	}
	return "clean"
}

func statusStrings(in []agenttraffic.AttemptStatus) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}

func sortedKinds(in []agenttraffic.FindingKind) []string {
	out := make([]string, 0, len(in))
	for _, k := range in {
		out = append(out, string(k))
	}
	slices.Sort(out)
	return out
}

func sortedFindingKinds(tr *Trace) []string {
	out := make([]string, 0, len(tr.Findings))
	for _, f := range tr.Findings {
		out = append(out, f.Kind)
	}
	slices.Sort(out)
	return out
}
