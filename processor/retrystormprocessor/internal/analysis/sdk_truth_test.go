package analysis

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// frameworkLimits are what a capture's framework cannot express, as ANALYSIS.md's
// framework table states, applied to the ground truth before comparing: the test then
// holds the analysis to what it reports in that case instead of to what happened.
var frameworkLimits = map[string]func(*fixtures.CaptureExpect){
	// OpenAI Agents JS hands a tool's returned text to the model as is: a failure returned
	// as text is an ok span with an output, indistinguishable from a result.
	"openai_agents_hidden": func(e *fixtures.CaptureExpect) {
		for i := range e.Calls {
			if e.Calls[i].Hidden {
				e.Calls[i].Statuses = slices.Repeat([]string{"ok"}, len(e.Calls[i].Statuses))
				e.Calls[i].Hidden = false
			}
		}
	},
}

// traceloopToolName is what OpenLLMetry's LangChain instrumentation names every tool span
// after: the tool's class. The tool's own name is only in a successful execution's output.
const traceloopToolName = "DynamicStructuredTool"

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
			want := *truth.Expect
			want.Calls = slices.Clone(want.Calls)
			if limit, ok := frameworkLimits[name]; ok {
				limit(&want)
			}
			td := ptrace.NewTraces()
			for _, r := range requests {
				r.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
			}
			an := New(DefaultConfig(), stalecache.New(100))
			got := an.Analyze(td)
			units := expectedUnits(t, want, truth)
			matchCalls(t, got, want)
			matchUnits(t, got, units, want)
			reason := reasonOf(got.Signals)
			assert.Equal(t, expectedReason(units, want), reason, "sampling reason")
			if q := New(DefaultConfig(), stalecache.New(100)).Triage(td); q.Clean {
				assert.Equal(t, "clean", reason, "triage called a %s trace clean", reason)
			}
		})
	}
	assert.GreaterOrEqual(t, checked, 11, "captures with a ground truth")
}

// wantUnitOf is one record unit the ground truth implies.
type wantUnitOf struct {
	calls    []fixtures.ExpectedCall
	statuses []string
	sends    []string // the HTTP sends' statuses under the unit's one attempt
	args     []string
}

// expectedUnits forms the units of want: a model re-call joins the unit of the call before
// it when that call failed with the same tool and arguments (ANALYSIS.md, grouping rule 6);
// the arguments are the tools' own record of each execution (truth.Tools, in order).
func expectedUnits(t *testing.T, want fixtures.CaptureExpect, truth fixtures.CaptureTruth) []wantUnitOf {
	t.Helper()
	var units []wantUnitOf
	next := 0
	for _, c := range want.Calls {
		executions := c.Attempts
		if c.RetryLayer == "http" {
			executions = 1
		}
		require.LessOrEqual(t, next+executions, len(truth.Tools), "truth lists every execution")
		args := string(truth.Tools[next].Arguments)
		next += executions
		statuses, sends := c.Statuses, []string(nil)
		if c.RetryLayer == "http" {
			statuses, sends = []string{"ok"}, c.Statuses
		}
		if n := len(units); n > 0 && c.RetryLayer == "agent" {
			prev := &units[n-1]
			last := prev.calls[len(prev.calls)-1]
			if last.Tool == c.Tool && last.Statuses[len(last.Statuses)-1] != "ok" && prev.args[len(prev.args)-1] == args {
				prev.calls = append(prev.calls, c)
				prev.statuses = append(prev.statuses, statuses...)
				prev.args = append(prev.args, args)
				continue
			}
		}
		units = append(units, wantUnitOf{calls: []fixtures.ExpectedCall{c}, statuses: slices.Clone(statuses), sends: sends, args: []string{args}})
	}
	return units
}

func (u wantUnitOf) storm() bool {
	return len(u.calls) >= 2 || u.calls[0].Attempts >= 2
}

func (u wantUnitOf) layer() string {
	switch {
	case len(u.calls) > 1:
		return stormrecord.LayerAgent
	case len(u.sends) > 1:
		return stormrecord.LayerTransport
	case u.calls[0].Attempts > 1:
		return stormrecord.LayerExecutor
	}
	return stormrecord.LayerNone
}

// class is the storm class of the unit's tries, by the rules' plain reading: every
// capture's storm either recovers with unchanged arguments or never succeeds.
func (u wantUnitOf) class() string {
	if !u.storm() {
		return ""
	}
	tries := u.statuses
	if len(u.sends) > 1 {
		tries = u.sends
	}
	switch {
	case tries[len(tries)-1] == "ok" && slices.ContainsFunc(tries, func(s string) bool { return s != "ok" }):
		return "transient_dependency"
	case !slices.Contains(tries, "ok"):
		return "exhausted"
	}
	return ""
}

func (u wantUnitOf) failed() bool { return u.statuses[len(u.statuses)-1] != "ok" }

func matchCalls(t *testing.T, got *Trace, want fixtures.CaptureExpect) {
	t.Helper()
	var calls []string
	for _, u := range got.Units {
		for _, c := range u.Calls {
			var statuses []string
			for _, a := range c.Attempts {
				statuses = append(statuses, truthStatus(a.Status.String()))
			}
			calls = append(calls, c.Last().ToolName+" "+jsonOf(statuses))
		}
	}
	var wantCalls []string
	for _, c := range want.Calls {
		tool := c.Tool
		if isTraceloop(want) {
			tool = traceloopToolName
		}
		statuses := c.Statuses
		if c.RetryLayer == "http" {
			statuses = []string{"ok"}
		}
		wantCalls = append(wantCalls, tool+" "+jsonOf(statuses))
	}
	assert.Equal(t, wantCalls, calls, "logical calls in start order: tool and attempt statuses")
	remapped := 0
	for _, c := range want.Calls {
		if c.Hidden {
			for _, s := range c.Statuses {
				if s != "ok" {
					remapped++
				}
			}
		}
	}
	assert.Equal(t, remapped, got.Remaps, "failed attempts whose span did not say ERROR are remapped")
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

func isTraceloop(want fixtures.CaptureExpect) bool {
	return len(want.AgentSpans) > 0 && want.AgentSpans[0].Marker == "traceloop.span.kind=agent"
}

func matchUnits(t *testing.T, got *Trace, units []wantUnitOf, want fixtures.CaptureExpect) {
	t.Helper()
	type unitView struct {
		Attempts int
		Statuses []string
		Storm    bool
		Layer    string
		Class    string
		Findings []string
		Record   bool
	}
	var gotUnits, wantUnits []unitView
	for _, u := range got.Units {
		var statuses []string
		for _, a := range u.Attempts() {
			statuses = append(statuses, truthStatus(a.Status.String()))
		}
		var kinds []string
		for _, f := range u.Findings {
			kinds = append(kinds, f.Kind)
		}
		gotUnits = append(gotUnits, unitView{len(statuses), statuses, u.Storm, u.Layer, u.Class, kinds, u.Record != nil})
	}
	for _, u := range units {
		var kinds []string
		if want.Unrecovered && u.failed() {
			kinds = []string{"unrecovered_failure"}
		}
		wantUnits = append(wantUnits, unitView{len(u.statuses), u.statuses, u.storm(), u.layer(), u.class(), kinds,
			u.storm() || u.failed() || len(kinds) > 0})
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
		if i < len(units) && u.Record != nil && units[i].storm() {
			assert.Equal(t, len(units[i].sends), u.Record.Layers.Transport, "sends recorded")
		}
	}
}

func expectedReason(units []wantUnitOf, want fixtures.CaptureExpect) string {
	reason := "clean"
	for _, u := range units {
		if u.storm() {
			return "storm"
		}
		if u.failed() || slices.ContainsFunc(u.statuses, func(s string) bool { return s != "ok" }) {
			reason = "tool_error"
		}
	}
	if reason == "clean" && want.Unrecovered {
		return "divergence"
	}
	return reason
}

// truthStatus is a status as the captures' ground truth writes it: the scripts know a
// failure, not whether its text names a timeout (which makes it a timeout here).
func truthStatus(s string) string {
	if s == "timeout" {
		return "error"
	}
	return s
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
