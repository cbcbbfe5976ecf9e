package agenttraffic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// spanView is a span reduced to what the framework shapes must share with the real
// captures: names, kind, status code, attribute keys and event signatures.
type spanView struct {
	name   string
	kind   ptrace.SpanKind
	status ptrace.StatusCode
	attrs  map[string]string
	keys   []string
	// events are "name(key,key,…)", one per event, in order.
	events []string
	// ancestors are the names of the parent chain up to the root, agent names spelled
	// "<agent>".
	ancestors []string
	scope     string
}

// appKeys are the attributes the simulated application adds to its own tool and agent
// spans in every shape (its side effect, idempotency key, the asset a read names and the
// assets the answer cites); the captured tools set none.
var appKeys = []string{"side_effect", "idempotency_key", "retrystorm.read.asset", "retrystorm.answer.cited_assets"}

func viewsOf(td ptrace.Traces) []spanView {
	type entry struct {
		span  ptrace.Span
		scope string
	}
	byID := map[string]entry{}
	var order []entry
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		for _, ss := range td.ResourceSpans().At(i).ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				e := entry{s, ss.Scope().Name()}
				byID[s.SpanID().String()] = e
				order = append(order, e)
			}
		}
	}
	views := make([]spanView, 0, len(order))
	for _, e := range order {
		v := spanView{name: e.span.Name(), kind: e.span.Kind(), status: e.span.Status().Code(),
			attrs: map[string]string{}, scope: e.scope}
		for k, a := range e.span.Attributes().All() {
			v.attrs[k] = a.AsString()
			if !slices.Contains(appKeys, k) {
				v.keys = append(v.keys, k)
			}
		}
		slices.Sort(v.keys)
		for _, ev := range e.span.Events().All() {
			var keys []string
			for k := range ev.Attributes().All() {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			v.events = append(v.events, ev.Name()+"("+strings.Join(keys, ",")+")")
		}
		for p, ok := byID[e.span.ParentSpanID().String()]; ok; p, ok = byID[p.span.ParentSpanID().String()] {
			v.ancestors = append(v.ancestors, anonymousAgent(p.span.Name()))
		}
		views = append(views, v)
	}
	return views
}

func anonymousAgent(name string) string {
	for _, a := range agents {
		name = strings.ReplaceAll(name, a, "<agent>")
	}
	return name
}

// captureViews reads a capture of testdata/sdk.
func captureViews(t *testing.T, name string) []spanView {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "sdk", name+".jsonl"))
	if err != nil {
		t.Fatalf("open capture: %v", err)
	}
	defer f.Close()
	var views []spanView
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(sc.Bytes())
		if err != nil {
			t.Fatalf("read capture %s: %v", name, err)
		}
		views = append(views, viewsOf(td)...)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read capture %s: %v", name, err)
	}
	return views
}

// spanRole picks the spans of one kind in a framework's trace.
type spanRole struct {
	name string
	pick func(v spanView) bool
	// events: the role's events must match too (model and cycle events replay history).
	events bool
}

func attrIs(k, want string) func(spanView) bool {
	return func(v spanView) bool { return v.attrs[k] == want }
}

func isRoot(v spanView) bool { return len(v.ancestors) == 0 }

func openinferenceTool(status ptrace.StatusCode) func(spanView) bool {
	return func(v spanView) bool { return v.attrs["openinference.span.kind"] == "TOOL" && v.status == status }
}

var frameworkCaptures = []struct {
	shape    Shape
	capture  string
	scenario Scenario // one that renders a failed and a successful attempt
	roles    []spanRole
}{
	{ShapeStrands, "strands_hidden", ScenarioExecutorStorm, []spanRole{
		{"tool ok", attrIs("gen_ai.tool.status", "success"), true},
		{"tool failed", attrIs("gen_ai.tool.status", "error"), true},
		{"agent", isRoot, true},
		{"cycle", func(v spanView) bool { return v.name == "execute_agent_loop_cycle" }, false},
		{"chat", attrIs("gen_ai.operation.name", "chat"), false},
	}},
	{ShapeOpenInferenceLangChain, "langchain_openinference", ScenarioExecutorStorm, []spanRole{
		{"tool ok", openinferenceTool(ptrace.StatusCodeOk), true},
		{"tool failed", openinferenceTool(ptrace.StatusCodeError), true},
		{"agent", isRoot, true},
		{"start", func(v spanView) bool { return v.name == "__start__" }, true},
		{"tools node", func(v spanView) bool { return v.name == "tools" }, true},
		{"model node", func(v spanView) bool { return v.name == "model_request" }, true},
	}},
	{ShapeOpenAIAgents, "openai_agents_recall", ScenarioAgentStorm, []spanRole{
		{"tool ok", openinferenceTool(ptrace.StatusCodeOk), true},
		{"tool failed", openinferenceTool(ptrace.StatusCodeError), true},
		{"root agent", isRoot, true},
		{"workflow", func(v spanView) bool { return v.name == "Agent workflow" && !isRoot(v) }, true},
		{"agent", func(v spanView) bool { return v.attrs["openinference.span.kind"] == "AGENT" && !isRoot(v) }, true},
		{"turn", func(v spanView) bool { return v.name == "turn" }, true},
	}},
}

// TestFrameworkShapesMatchTheirCaptures holds each framework shape to the real SDK capture
// it models: every span of a role (tool attempt that worked, that failed, the agent spans,
// the turn and node spans) has the capture's kind, status code, attribute keys (less the
// application's own) and events, under the capture's chain of parents, in the capture's
// instrumentation scope.
func TestFrameworkShapesMatchTheirCaptures(t *testing.T) {
	for _, fc := range frameworkCaptures {
		t.Run(string(fc.shape), func(t *testing.T) {
			want := captureViews(t, fc.capture)
			var got []spanView
			for _, tr := range generate(t, Config{Seed: 8, Shapes: []Shape{fc.shape}, Scenarios: ScenarioWeights{fc.scenario: 1},
				ToolsPerTrace: 4}, 4) {
				got = append(got, viewsOf(TraceToPdata(&tr))...)
			}
			if got[0].scope != want[0].scope {
				t.Errorf("scope %q, the capture's is %q", got[0].scope, want[0].scope)
			}
			for _, role := range fc.roles {
				model := slices.IndexFunc(want, role.pick)
				if model < 0 {
					t.Fatalf("%s: the capture has no such span", role.name)
				}
				n := 0
				for _, v := range got {
					if !role.pick(v) {
						continue
					}
					n++
					if diff := viewDiff(v, want[model], role.events); diff != "" {
						t.Errorf("%s %q: %s", role.name, v.name, diff)
					}
				}
				if n == 0 {
					t.Errorf("%s: no generated span", role.name)
				}
			}
		})
	}
}

func viewDiff(got, want spanView, events bool) string {
	var diffs []string
	if got.kind != want.kind || got.status != want.status {
		diffs = append(diffs, fmt.Sprintf("kind %v status %v, capture %v %v", got.kind, got.status, want.kind, want.status))
	}
	if !slices.Equal(got.keys, want.keys) {
		diffs = append(diffs, fmt.Sprintf("attributes %v, capture %v", got.keys, want.keys))
	}
	if events && !slices.Equal(got.events, want.events) {
		diffs = append(diffs, fmt.Sprintf("events %v, capture %v", got.events, want.events))
	}
	if !slices.Equal(got.ancestors, want.ancestors) {
		diffs = append(diffs, fmt.Sprintf("parents %v, capture %v", got.ancestors, want.ancestors))
	}
	return strings.Join(diffs, "; ")
}

// TestFrameworkShapesBuildSpanTrees: every scenario a framework shape expresses renders one
// agent root, children after and inside their parents, and a model span per turn.
func TestFrameworkShapesBuildSpanTrees(t *testing.T) {
	for _, shape := range FrameworkShapes() {
		for _, tr := range shapeTraffic(t, shape, 30) {
			checkSpanTree(t, &tr)
		}
	}
}

// frameworkScenarios are the scenarios each framework shape expresses exactly.
var frameworkScenarios = map[Shape][]Scenario{
	// No timeout (a failure is only gen_ai.tool.status=error), so no stale cache; every
	// ended tool span says how it went, so nothing is unresolved.
	ShapeStrands: {ScenarioClean, ScenarioTransportStorm, ScenarioExecutorStorm, ScenarioAgentStorm,
		ScenarioChangedArguments, ScenarioRetryAfterSuccess, ScenarioExhaustedGreen, ScenarioMCPIsError,
		ScenarioDuplicateSideEffect, ScenarioNestedDuplicate, ScenarioUnbackedCitation, ScenarioResultDrift},
	// No call id: nothing that needs one call id across arguments or agent levels; no
	// isError result; no HTTP span under a tool; results that name their call.
	ShapeOpenInferenceLangChain: {ScenarioClean, ScenarioExecutorStorm, ScenarioAgentStorm, ScenarioRetryAfterSuccess,
		ScenarioExhaustedGreen, ScenarioDuplicateSideEffect, ScenarioUnbackedCitation, ScenarioResultDrift,
		ScenarioUnresolvedAttempt},
	// One try per call: only what a model re-call or a single attempt can show.
	ShapeOpenAIAgents: {ScenarioClean, ScenarioAgentStorm, ScenarioUnbackedCitation, ScenarioUnresolvedAttempt},
}

// TestFrameworkShapesRefuseWhatTheyCannotExpress: Validate accepts a framework shape for
// exactly its scenarios and names the refused scenario; each accepted one generates.
func TestFrameworkShapesRefuseWhatTheyCannotExpress(t *testing.T) {
	for _, shape := range FrameworkShapes() {
		for _, sc := range AllScenarios() {
			cfg := Config{Seed: 2, Shapes: []Shape{shape}, Scenarios: ScenarioWeights{sc: 1}, ToolsPerTrace: 3}
			err := cfg.Validate()
			if !slices.Contains(frameworkScenarios[shape], sc) {
				if err == nil || !strings.Contains(err.Error(), "scenario "+string(sc)+" needs one of the shapes") {
					t.Errorf("%s/%s: Validate = %v, want a refusal naming the scenario", shape, sc, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s/%s: Validate = %v", shape, sc, err)
				continue
			}
			for _, tr := range generate(t, cfg, 2) {
				if tr.Truth.Shape != shape {
					t.Errorf("%s/%s: generated a %s trace", shape, sc, tr.Truth.Shape)
				}
			}
		}
	}
}

func TestFrameworkShapesParseByName(t *testing.T) {
	got, err := ParseShapes("strands, openinference_langchain,openai_agents")
	if err != nil || !slices.Equal(got, FrameworkShapes()) {
		t.Fatalf("ParseShapes = %v, %v", got, err)
	}
	for _, shape := range got {
		if err := (Config{Shapes: []Shape{shape}}).Validate(); err != nil {
			t.Errorf("%s with the default mix: %v", shape, err)
		}
	}
}

// recordAttempts returns the spans of the trace's one record.
func recordAttempts(t *testing.T, tr *Trace) (ExpectedRecord, []*Span) {
	t.Helper()
	if len(tr.Truth.Records) != 1 {
		t.Fatalf("%s/%s: records %+v, want one", tr.Truth.Shape, tr.Truth.Scenario, tr.Truth.Records)
	}
	rec := tr.Truth.Records[0]
	var out []*Span
	for _, id := range rec.AttemptSpanIDs {
		out = append(out, spanByHex(tr, id))
	}
	return rec, out
}

func parentsOf(attempts []*Span) []SpanID {
	var out []SpanID
	for _, s := range attempts {
		out = append(out, s.Parent)
	}
	return slices.Compact(out)
}

// callIDKeys are every attribute an instrumentation names a call id with.
var callIDKeys = []string{"gen_ai.tool.call.id", "tool.id", "tool_use_id", "ai.toolCall.id", "span_id"}

// TestStrandsRetriesAsCaptured: an executor retry is sibling execute_tool spans of one call
// id in one cycle, each OK whatever it did, its failure in gen_ai.tool.status and its
// error text as the choice; a model re-call is a new call id in the next cycle. The
// arguments and answers are only in the tool span's events.
func TestStrandsRetriesAsCaptured(t *testing.T) {
	for _, sc := range []Scenario{ScenarioExecutorStorm, ScenarioAgentStorm} {
		for _, tr := range generate(t, Config{Seed: 4, Shapes: []Shape{ShapeStrands}, Scenarios: ScenarioWeights{sc: 1}}, 4) {
			rec, attempts := recordAttempts(t, &tr)
			ids := map[string]bool{}
			for i, s := range attempts {
				id := strAttr(s, "gen_ai.tool.call.id")
				ids[id] = true
				if s.Status.Code != StatusOK {
					t.Errorf("%s: attempt %d has status %v, Strands ends every tool span OK", sc, i+1, s.Status)
				}
				wantStatus := map[AttemptStatus]string{AttemptOK: "success", AttemptError: "error"}[rec.Statuses[i]]
				if got := strAttr(s, "gen_ai.tool.status"); got != wantStatus {
					t.Errorf("%s: attempt %d gen_ai.tool.status %q, truth %s", sc, i+1, got, rec.Statuses[i])
				}
				for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value"} {
					if _, ok := s.Attr(k); ok {
						t.Errorf("%s: attempt %d carries %s", sc, i+1, k)
					}
				}
				if eventAttr(s, "gen_ai.tool.message", "id") != id || eventAttr(s, "gen_ai.choice", "id") != id {
					t.Errorf("%s: attempt %d events do not name call id %s", sc, i+1, id)
				}
				var args map[string]any
				if json.Unmarshal([]byte(eventAttr(s, "gen_ai.tool.message", "content")), &args) != nil || len(args) == 0 {
					t.Errorf("%s: attempt %d arguments %q are not a JSON object", sc, i+1, eventAttr(s, "gen_ai.tool.message", "content"))
				}
				var answer []map[string]string
				if json.Unmarshal([]byte(resultOf(s)), &answer) != nil || len(answer) != 1 || answer[0]["text"] == "" {
					t.Errorf("%s: attempt %d choice %q is not [{\"text\":…}]", sc, i+1, resultOf(s))
				}
			}
			parents := parentsOf(attempts)
			switch sc {
			case ScenarioExecutorStorm:
				if len(ids) != 1 || !ids[rec.CallKey] || len(parents) != 1 {
					t.Errorf("executor retry: call ids %v (key %s) under %d cycles, want one id in one cycle", ids, rec.CallKey, len(parents))
				}
			case ScenarioAgentStorm:
				if len(ids) != len(attempts) || len(parents) != len(attempts) || strAttr(attempts[0], "gen_ai.tool.call.id") != rec.CallKey {
					t.Errorf("re-calls: %d call ids in %d cycles for %d attempts, want one each", len(ids), len(parents), len(attempts))
				}
				for i := 1; i < len(parents); i++ {
					prev, cur := strAttr(tr.Span(parents[i-1]), "agent_loop.cycle_id"), strAttr(tr.Span(parents[i]), "agent_loop.cycle_id")
					if !cycleFollows(prev, cur) {
						t.Errorf("re-call %d in %s after %s, want the next cycle", i+1, cur, prev)
					}
				}
			}
		}
	}
}

func cycleFollows(prev, cur string) bool {
	var a, b int
	_, errA := fmt.Sscanf(prev, "cycle-%d", &a)
	_, errB := fmt.Sscanf(cur, "cycle-%d", &b)
	return errA == nil && errB == nil && b == a+1
}

// TestOpenInferenceFrameworksRetriesAsCaptured: LangChain's and the Agents SDK's TOOL spans
// carry no call id; a thrown error is status ERROR with an exception event; LangChain's
// retries share their call's tools node, a re-call gets a node of its own; an Agents SDK
// re-call is in the next turn.
func TestOpenInferenceFrameworksRetriesAsCaptured(t *testing.T) {
	cases := []struct {
		shape Shape
		sc    Scenario
		// parents: how many distinct parents the record's attempts have (0: one per attempt).
		parents int
	}{
		{ShapeOpenInferenceLangChain, ScenarioExecutorStorm, 1},
		{ShapeOpenInferenceLangChain, ScenarioAgentStorm, 0},
		{ShapeOpenAIAgents, ScenarioAgentStorm, 0},
	}
	for _, c := range cases {
		for _, tr := range generate(t, Config{Seed: 4, Shapes: []Shape{c.shape}, Scenarios: ScenarioWeights{c.sc: 1}}, 4) {
			label := string(c.shape) + "/" + string(c.sc)
			rec, attempts := recordAttempts(t, &tr)
			if rec.CallKey != "" {
				t.Errorf("%s: record key %q, want none (no call id)", label, rec.CallKey)
			}
			for i, s := range attempts {
				for _, k := range callIDKeys {
					if _, ok := s.Attr(k); ok {
						t.Errorf("%s: attempt %d carries call id attribute %s", label, i+1, k)
					}
				}
				failed := rec.Statuses[i] != AttemptOK
				if failed != (s.Status.Code == StatusError) || failed != (len(s.Events) == 1 && s.Events[0].Name == "exception") {
					t.Errorf("%s: attempt %d (%s) has status %v and events %v", label, i+1, rec.Statuses[i], s.Status.Code, s.Events)
				}
				if _, ok := s.Attr("output.mime_type"); ok == failed {
					t.Errorf("%s: attempt %d (%s): output.mime_type present %v", label, i+1, rec.Statuses[i], ok)
				}
			}
			want := c.parents
			if want == 0 {
				want = len(attempts)
			}
			if got := len(parentsOf(attempts)); got != want {
				t.Errorf("%s: attempts under %d parents, want %d", label, got, want)
			}
			for _, p := range parentsOf(attempts) {
				if name := tr.Span(p).Name; name != map[Shape]string{ShapeOpenInferenceLangChain: "tools", ShapeOpenAIAgents: "turn"}[c.shape] {
					t.Errorf("%s: attempt under %q", label, name)
				}
			}
			if c.shape == ShapeOpenInferenceLangChain {
				checkToolMessageNamesModelCall(t, &tr, attempts[len(attempts)-1])
			}
		}
	}
}

// checkToolMessageNamesModelCall: the ToolMessage a LangChain attempt returned names the
// call id the model's LLM span asked with: the only place a TOOL span names its call.
func checkToolMessageNamesModelCall(t *testing.T, tr *Trace, s *Span) {
	t.Helper()
	var out struct {
		Output struct {
			Kwargs struct {
				ToolCallID string `json:"tool_call_id"`
				Name       string `json:"name"`
			} `json:"kwargs"`
		} `json:"output"`
	}
	if err := json.Unmarshal([]byte(resultOf(s)), &out); err != nil || out.Output.Kwargs.ToolCallID == "" {
		t.Fatalf("output.value %q holds no ToolMessage with a call id", resultOf(s))
	}
	for i := range tr.Spans {
		m := &tr.Spans[i]
		for _, a := range m.Attrs {
			if strings.HasPrefix(a.Key, "llm.output_messages.") && strings.HasSuffix(a.Key, ".tool_call.id") &&
				a.Value.Str == out.Output.Kwargs.ToolCallID {
				return
			}
		}
	}
	t.Errorf("no LLM span asked for call %s", out.Output.Kwargs.ToolCallID)
}
