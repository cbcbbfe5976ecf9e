package agenttraffic

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// expectation is what a scenario's trace must carry, per ANALYSIS.md's rules.
type expectation struct {
	reason   SamplingReason
	storm    bool
	layer    Layer
	class    StormClass
	findings []FindingKind // trace-level, in order
}

var scenarioExpectations = map[Scenario]expectation{
	ScenarioClean:               {reason: ReasonClean},
	ScenarioTransportStorm:      {ReasonStorm, true, LayerTransport, ClassTransientDependency, nil},
	ScenarioExecutorStorm:       {ReasonStorm, true, LayerExecutor, ClassTransientDependency, nil},
	ScenarioAgentStorm:          {ReasonStorm, true, LayerAgent, ClassTransientDependency, nil},
	ScenarioChangedArguments:    {ReasonStorm, true, LayerExecutor, ClassChangedArguments, nil},
	ScenarioRetryAfterSuccess:   {ReasonStorm, true, LayerExecutor, ClassRetryAfterSuccess, nil},
	ScenarioExhaustedGreen:      {ReasonStorm, true, LayerExecutor, ClassExhausted, []FindingKind{FindingUnrecoveredFailure}},
	ScenarioMCPIsError:          {ReasonStorm, true, LayerExecutor, ClassTransientDependency, nil},
	ScenarioDuplicateSideEffect: {ReasonStorm, true, LayerExecutor, ClassDuplicateSideEffect, []FindingKind{FindingDuplicateSideEffect}},
	ScenarioStaleCache:          {ReasonStorm, true, LayerExecutor, ClassTransientDependency, []FindingKind{FindingStaleCacheSuspect}},
	ScenarioNestedDuplicate:     {ReasonDivergence, false, LayerNone, "", []FindingKind{FindingNestedDuplicate}},
	ScenarioUnbackedCitation:    {ReasonToolError, false, LayerNone, "", []FindingKind{FindingUnrecoveredFailure, FindingUnbackedCitation}},
	ScenarioIncompleteRecord:    {ReasonStorm, true, LayerExecutor, ClassTransientDependency, []FindingKind{FindingIncompleteRecord}},
	ScenarioResultDrift:         {ReasonStorm, true, LayerExecutor, ClassRetryAfterSuccess, []FindingKind{FindingResultDrift}},
	ScenarioUnresolvedAttempt:   {ReasonToolError, false, LayerNone, "", []FindingKind{FindingUnresolvedAttempt}},
	ScenarioAttemptGap:          {ReasonStorm, true, LayerExecutor, ClassTransientDependency, []FindingKind{FindingAttemptGap}},
}

// scenarioTraces generates n traces of one scenario in one shape; a stale_cache run also
// returns the warm traces, which are clean.
func scenarioTraces(t *testing.T, sc Scenario, shape Shape, n int) []Trace {
	t.Helper()
	gen, err := NewGenerator(Config{Seed: 42, Shapes: []Shape{shape}, Scenarios: ScenarioWeights{sc: 1}})
	if err != nil {
		t.Fatalf("new generator: %v", err)
	}
	return gen.Generate(n)
}

func TestScenarioTruth(t *testing.T) {
	for _, sc := range AllScenarios() {
		for _, shape := range scenarioShapes(sc) {
			t.Run(fmt.Sprintf("%s/%s", sc, shape), func(t *testing.T) {
				for _, tr := range scenarioTraces(t, sc, shape, 4) {
					if tr.Truth.WarmFor != "" {
						checkExpectation(t, &tr, scenarioExpectations[ScenarioClean])
						continue
					}
					if tr.Truth.Scenario != sc || tr.Truth.Shape != shape {
						t.Fatalf("trace is %s/%s, want %s/%s", tr.Truth.Scenario, tr.Truth.Shape, sc, shape)
					}
					checkExpectation(t, &tr, scenarioExpectations[sc])
					checkTruthAgainstSpans(t, &tr)
					checkScenarioSpans(t, &tr)
				}
			})
		}
	}
}

func checkExpectation(t *testing.T, tr *Trace, want expectation) {
	t.Helper()
	got := tr.Truth
	if got.Reason != want.reason || got.Keep != (want.reason != ReasonClean) {
		t.Errorf("reason %s keep %v, want %s", got.Reason, got.Keep, want.reason)
	}
	if !slices.Equal(got.Findings, want.findings) && len(got.Findings)+len(want.findings) > 0 {
		t.Errorf("findings %v, want %v", got.Findings, want.findings)
	}
	if want.reason == ReasonClean {
		if len(got.Records) != 0 || got.Storms != 0 {
			t.Errorf("clean trace has records %+v", got.Records)
		}
		return
	}
	if len(got.Records) != 1 {
		t.Fatalf("records %+v, want exactly one", got.Records)
	}
	rec := got.Records[0]
	if rec.Storm != want.storm || rec.Layer != want.layer || rec.Class != want.class {
		t.Errorf("record storm %v layer %s class %q, want %v %s %q", rec.Storm, rec.Layer, rec.Class,
			want.storm, want.layer, want.class)
	}
	if wantStorms := map[bool]int{true: 1}[want.storm]; got.Storms != wantStorms {
		t.Errorf("storms %d, want %d", got.Storms, wantStorms)
	}
}

// checkTruthAgainstSpans reads every recorded call back from the spans.
func checkTruthAgainstSpans(t *testing.T, tr *Trace) {
	t.Helper()
	recorded := map[string]bool{}
	for _, rec := range tr.Truth.Records {
		checkRecordSpans(t, tr, rec)
		for _, id := range rec.AttemptSpanIDs {
			recorded[id] = true
		}
	}
	attempts := rootAttempts(tr)
	if len(attempts) != tr.Truth.ToolAttempts {
		t.Errorf("%d tool attempts in spans, truth says %d", len(attempts), tr.Truth.ToolAttempts)
	}
	for _, s := range attempts {
		if recorded[s.ID.String()] {
			continue
		}
		if st := statusOf(s); st != AttemptOK || len(httpChildren(tr, s.ID)) > 1 {
			t.Errorf("unrecorded attempt %s is %s with %d sends", s.Name, st, len(httpChildren(tr, s.ID)))
		}
	}
	root := tr.Root()
	if !isAgentRoot(root) || root.Status.Code == StatusError {
		t.Errorf("root %q status %v is not a green agent span", root.Name, root.Status)
	}
	if _, ok := root.Attr("retrystorm.answer.caveat"); ok {
		t.Error("root carries the caveat attribute")
	}
	for _, secret := range tr.Truth.Secrets {
		for i := range tr.Spans {
			if strings.Contains(tr.Spans[i].Name, secret) {
				t.Errorf("secret %q in span name %q", secret, tr.Spans[i].Name)
			}
		}
	}
}

func checkRecordSpans(t *testing.T, tr *Trace, rec ExpectedRecord) {
	t.Helper()
	if len(rec.AttemptSpanIDs) != rec.Attempts || len(rec.Statuses) != rec.Attempts {
		t.Fatalf("record %+v: attempts disagree", rec)
	}
	var sends []AttemptStatus
	ids := map[string]bool{}
	for i, id := range rec.AttemptSpanIDs {
		s := spanByHex(tr, id)
		if s == nil || !isToolAttempt(tr.Truth.Shape, s) {
			t.Fatalf("attempt %s is not a tool span", id)
		}
		if got := statusOf(s); got != rec.Statuses[i] {
			t.Errorf("attempt %d of %s: span says %s, truth %s", i+1, rec.Tool, got, rec.Statuses[i])
		}
		ids[callIDOf(tr, s)] = true
		for _, h := range httpChildren(tr, s.ID) {
			sends = append(sends, sendStatusOf(h))
		}
	}
	if !slices.Equal(sends, rec.TransportStatuses) || len(sends) != rec.Layers.Transport {
		t.Errorf("sends %v, truth %v (%d)", sends, rec.TransportStatuses, rec.Layers.Transport)
	}
	first := callIDOf(tr, spanByHex(tr, rec.AttemptSpanIDs[0]))
	if first != rec.CallKey || len(ids) != rec.Layers.Agent && rec.CallKey != "" {
		t.Errorf("call ids %v first %q, truth key %q over %d calls", ids, first, rec.CallKey, rec.Layers.Agent)
	}
	if rec.CallKey == "" && traitsOf(tr.Truth.Shape).callIDs {
		t.Errorf("shape %s has call ids but the record has no key", tr.Truth.Shape)
	}
}

// checkScenarioSpans checks what only one scenario injects.
func checkScenarioSpans(t *testing.T, tr *Trace) {
	t.Helper()
	switch tr.Truth.Scenario {
	case ScenarioClean:
		for i := range tr.Spans {
			if tr.Spans[i].Status.Code == StatusError {
				t.Errorf("clean trace has error span %q", tr.Spans[i].Name)
			}
		}
	case ScenarioAgentStorm:
		checkAgentStorm(t, tr)
	case ScenarioMCPIsError:
		// Strands ends every tool span OK; elsewhere the status stays unset.
		first, want := spanByHex(tr, tr.Truth.Records[0].AttemptSpanIDs[0]), StatusUnset
		if tr.Truth.Shape == ShapeStrands {
			want = StatusOK
		}
		if first.Status.Code != want || statusOf(first) != AttemptError {
			t.Errorf("isError attempt has status %v result %q", first.Status, resultOf(first))
		}
	case ScenarioDuplicateSideEffect:
		checkDuplicateSideEffect(t, tr)
	case ScenarioNestedDuplicate:
		checkNestedDuplicate(t, tr)
	case ScenarioUnbackedCitation:
		checkUnbackedCitation(t, tr)
	case ScenarioIncompleteRecord:
		checkIncompleteRecord(t, tr)
	case ScenarioResultDrift:
		checkResultDrift(t, tr)
	case ScenarioUnresolvedAttempt:
		checkUnresolvedAttempt(t, tr)
	case ScenarioAttemptGap:
		checkAttemptGap(t, tr)
	}
}

func checkAgentStorm(t *testing.T, tr *Trace) {
	t.Helper()
	rec := tr.Truth.Records[0]
	var args []string
	parents := map[SpanID]bool{}
	for _, id := range rec.AttemptSpanIDs {
		s := spanByHex(tr, id)
		args = append(args, argsOf(s))
		parents[s.Parent] = true
	}
	if len(slices.Compact(args)) != 1 {
		t.Errorf("agent re-calls changed arguments: %v", args)
	}
	// A re-call runs in the next turn: a step, a Strands cycle, a LangGraph tools node or an
	// Agents SDK turn of its own.
	if traits := traitsOf(tr.Truth.Shape); (traits.steps || traits.recallsApart || tr.Truth.Shape == ShapeStrands) &&
		len(parents) != rec.Layers.Agent {
		t.Errorf("re-calls share parents %v; want one turn each", parents)
	}
}

func argsOf(s *Span) string {
	for _, k := range []string{"gen_ai.tool.call.arguments", "input.value", "ai.toolCall.args", "tool_input", "args_hash",
		"acme.tool.input"} {
		if v, ok := s.Attr(k); ok {
			return v.JSON()
		}
	}
	// Strands sends the arguments in the tool span's gen_ai.tool.message event.
	if in := eventAttr(s, "gen_ai.tool.message", "content"); in != "" {
		return in
	}
	// OpenLLMetry nests the arguments in its input document, Logfire in the JSON-RPC
	// request, whose id changes from one attempt to the next.
	if in := strAttr(s, "traceloop.entity.input"); in != "" {
		return nestedJSON(in, "arguments")
	}
	if req := strAttr(s, "request"); req != "" {
		return nestedJSON(req, "params", "arguments")
	}
	return ""
}

// nestedJSON returns the canonical JSON of the element at path in doc, "" when absent.
func nestedJSON(doc string, path ...string) string {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return ""
	}
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	if v == nil {
		return ""
	}
	return jsonText(v)
}

func checkDuplicateSideEffect(t *testing.T, tr *Trace) {
	t.Helper()
	keys := map[string]bool{}
	for _, id := range tr.Truth.Records[0].AttemptSpanIDs {
		s := spanByHex(tr, id)
		if strAttr(s, "side_effect") != sideEffectExternal {
			t.Errorf("attempt side_effect %q", strAttr(s, "side_effect"))
		}
		k := strAttr(s, "idempotency_key") + strAttr(s, "idem_hash")
		keys[k] = true
	}
	if len(keys) != 1 || keys[""] {
		t.Errorf("idempotency keys %v, want one", keys)
	}
}

// checkNestedDuplicate: the counted record is the subagent's copy, under a subagent that
// sits under the parent agent's record of the same call id.
func checkNestedDuplicate(t *testing.T, tr *Trace) {
	t.Helper()
	counted := spanByHex(tr, tr.Truth.Records[0].AttemptSpanIDs[0])
	outer := 0
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if s != counted && isToolAttempt(tr.Truth.Shape, s) && callIDOf(tr, s) == callIDOf(tr, counted) {
			outer++
			if sub := agentOf(tr, counted); sub == tr.Root() || sub == nil || tr.Span(sub.Parent) != s {
				t.Errorf("the counted record is not under a subagent of the outer record")
			}
		}
	}
	if outer != 1 {
		t.Errorf("%d outer records of the call, want 1", outer)
	}
}

func checkUnbackedCitation(t *testing.T, tr *Trace) {
	t.Helper()
	cited, _ := tr.Root().Attr("retrystorm.answer.cited_assets")
	unbacked := 0
	for _, asset := range cited.Strs {
		ok := false
		for _, s := range rootAttempts(tr) {
			ok = ok || strAttr(s, "retrystorm.read.asset") == asset && statusOf(s) == AttemptOK
		}
		if !ok {
			unbacked++
		}
	}
	if unbacked != 1 {
		t.Errorf("%d unbacked assets among %v, want 1", unbacked, cited.Strs)
	}
}

func checkIncompleteRecord(t *testing.T, tr *Trace) {
	t.Helper()
	missing := 0
	for _, id := range tr.Truth.Records[0].AttemptSpanIDs {
		s := spanByHex(tr, id)
		_, hasAttempt := s.Attr("attempt")
		_, hasArgs := s.Attr("args_hash")
		if !hasAttempt || !hasArgs {
			missing++
		}
	}
	if missing != 1 {
		t.Errorf("%d attempts lack attempt/args_hash, want 1", missing)
	}
}

// checkResultDrift: two ok attempts of one call, sent the same arguments, answered
// differently.
func checkResultDrift(t *testing.T, tr *Trace) {
	t.Helper()
	var args, results []string
	for _, id := range tr.Truth.Records[0].AttemptSpanIDs {
		s := spanByHex(tr, id)
		if statusOf(s) != AttemptOK {
			t.Errorf("drifting attempt %s is %s", s.Name, statusOf(s))
		}
		args, results = append(args, argsOf(s)), append(results, resultOf(s))
	}
	if len(args) != 2 || args[0] != args[1] || args[0] == "" {
		t.Errorf("arguments %v, want two equal ones", args)
	}
	if len(results) != 2 || results[0] == results[1] || results[0] == "" || results[1] == "" {
		t.Errorf("results %v, want two different ones", results)
	}
}

// checkUnresolvedAttempt: the call's one attempt has a pending side effect and no outcome:
// an empty `status` in attempt_record, else status unset with no result and no error type.
func checkUnresolvedAttempt(t *testing.T, tr *Trace) {
	t.Helper()
	ids := tr.Truth.Records[0].AttemptSpanIDs
	s := spanByHex(tr, ids[len(ids)-1])
	if se := strAttr(s, "side_effect"); se != sideEffectUnknown {
		t.Errorf("side_effect %q, want %q", se, sideEffectUnknown)
	}
	if s.Status.Code != StatusUnset || resultOf(s) != "" || strAttr(s, "error.type") != "" || !s.End.After(s.Start) {
		t.Errorf("attempt status %v result %q error.type %q: not an ended attempt with no outcome",
			s.Status, resultOf(s), strAttr(s, "error.type"))
	}
	if tr.Truth.Shape == ShapeAttemptRecord {
		if v, ok := s.Attr("status"); !ok || v.Str != "" {
			t.Errorf("attempt record status %v (present %v), want present and empty", v.Str, ok)
		}
	}
}

// checkAttemptGap: the record's explicit attempt numbers skip or repeat.
func checkAttemptGap(t *testing.T, tr *Trace) {
	t.Helper()
	var nums []int64
	for _, id := range tr.Truth.Records[0].AttemptSpanIDs {
		v, ok := spanByHex(tr, id).Attr("attempt")
		if !ok {
			t.Fatalf("attempt %s carries no attempt number", id)
		}
		nums = append(nums, v.Int)
	}
	slices.Sort(nums)
	gap := false
	for i, n := range nums {
		gap = gap || n != int64(i+1)
	}
	if !gap {
		t.Errorf("attempt numbers %v neither skip nor repeat", nums)
	}
}

func TestStaleCacheWarmTrace(t *testing.T) {
	for _, shape := range scenarioShapes(ScenarioStaleCache) {
		traces := scenarioTraces(t, ScenarioStaleCache, shape, 2)
		warm, stale := &traces[0], &traces[1]
		if warm.Truth.WarmFor != stale.Truth.TraceID || warm.Truth.Scenario != ScenarioClean {
			t.Fatalf("%s: first trace %+v is not the warm trace of the second", shape, warm.Truth)
		}
		ids := stale.Truth.Records[0].AttemptSpanIDs
		live, cached := spanByHex(stale, ids[0]), spanByHex(stale, ids[1])
		if d := cached.End.Sub(cached.Start); d > 2*time.Millisecond || live.End.Sub(live.Start) < 5*time.Second {
			t.Errorf("%s: cached answer took %v after a %v live try", shape, d, live.End.Sub(live.Start))
		}
		var earlier *Span
		for _, s := range rootAttempts(warm) {
			if resultOf(s) == resultOf(cached) {
				earlier = s
			}
		}
		if earlier == nil || cached.End.Sub(earlier.End) < time.Minute {
			t.Errorf("%s: no result identical to the cached one at least 1m earlier in the warm trace", shape)
		}
	}
}
