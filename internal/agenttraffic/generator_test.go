package agenttraffic

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func generate(t testing.TB, cfg Config, n int) []Trace {
	t.Helper()
	gen, err := NewGenerator(cfg)
	if err != nil {
		t.Fatalf("new generator: %v", err)
	}
	return gen.Generate(n)
}

func TestGeneratorIsDeterministic(t *testing.T) {
	cfg := Config{Seed: 11, EveryScenario: true}
	a, b := generate(t, cfg, 40), generate(t, cfg, 40)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed produced two different runs")
	}
	c := generate(t, Config{Seed: 12, EveryScenario: true}, 40)
	if a[0].ID == c[0].ID || reflect.DeepEqual(a[0].Spans, c[0].Spans) {
		t.Fatal("different seeds produced the same first trace")
	}
}

func TestEveryScenarioComesFirst(t *testing.T) {
	traces := generate(t, Config{Seed: 3, EveryScenario: true, Scenarios: ScenarioWeights{ScenarioClean: 1}}, 20)
	seen := map[Scenario]int{}
	for _, tr := range traces {
		if tr.Truth.WarmFor == "" {
			seen[tr.Truth.Scenario]++
		}
	}
	for _, sc := range AllScenarios() {
		if seen[sc] == 0 {
			t.Errorf("scenario %s never generated", sc)
		}
	}
}

// TestDefaultMix checks the shape of a default run: valid span trees, an invoke_agent root
// with model spans in every trace, about 60 spans per trace, about 90% clean traces.
func TestDefaultMix(t *testing.T) {
	traces := generate(t, Config{Seed: 5}, 600)
	spans, clean := 0, 0
	for i := range traces {
		tr := &traces[i]
		checkSpanTree(t, tr)
		spans += len(tr.Spans)
		if tr.Truth.Scenario == ScenarioClean {
			clean++
			if tr.Truth.Reason != ReasonClean || tr.Truth.Keep {
				t.Errorf("clean trace %s judged %s", tr.Truth.TraceID, tr.Truth.Reason)
			}
		}
	}
	if avg := float64(spans) / float64(len(traces)); avg < 45 || avg > 75 {
		t.Errorf("average %.1f spans per trace, want about 60", avg)
	}
	if share := float64(clean) / float64(len(traces)); math.Abs(share-0.9) > 0.05 {
		t.Errorf("%.2f of traces clean, want about 0.90", share)
	}
}

func checkSpanTree(t *testing.T, tr *Trace) {
	t.Helper()
	ids := map[SpanID]bool{}
	roots, models := 0, 0
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if s.ID.IsZero() || ids[s.ID] {
			t.Fatalf("trace %s: span id %s zero or repeated", tr.ID, s.ID)
		}
		ids[s.ID] = true
		if s.Parent.IsZero() {
			roots++
		} else if !ids[s.Parent] {
			t.Fatalf("trace %s: span %q comes before its parent or has none", tr.ID, s.Name)
		}
		if s.End.Before(s.Start) {
			t.Errorf("trace %s: span %q ends before it starts", tr.ID, s.Name)
		}
		if p := tr.Span(s.Parent); p != nil && (s.Start.Before(p.Start) || s.End.After(p.End)) {
			t.Errorf("trace %s: span %q lies outside its parent %q", tr.ID, s.Name, p.Name)
		}
		if isModelSpan(s) {
			models++
		}
	}
	if roots != 1 || !isAgentRoot(tr.Root()) || strAttr(tr.Root(), "gen_ai.operation.name") == "invoke_agent" &&
		strAttr(tr.Root(), "gen_ai.agent.name") == "" {
		t.Errorf("trace %s: %d roots, root %q", tr.ID, roots, tr.Root().Name)
	}
	if models < 2 {
		t.Errorf("trace %s: %d model spans", tr.ID, models)
	}
}

func isModelSpan(s *Span) bool {
	return strings.HasPrefix(s.Name, "chat ") || s.Name == "ChatCompletion" || s.Name == "openai.chat" ||
		s.Name == "ai.generateText.doGenerate" || s.Name == "claude_code.llm_request" ||
		s.Name == "acme.llm.generate" || strAttr(s, "gen_ai.operation.name") == "chat" ||
		strAttr(s, "openinference.span.kind") == "LLM"
}

func TestTracesFollowTheBaseClock(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	traces := generate(t, Config{Seed: 1, Base: base, Interval: time.Second, Scenarios: ScenarioWeights{ScenarioClean: 1}}, 3)
	for i, tr := range traces {
		if got, want := tr.Root().Start, base.Add(time.Duration(i)*time.Second); !got.Equal(want) {
			t.Errorf("trace %d starts %v, want %v", i, got, want)
		}
	}
}

func TestSecretsAreSentInPayloads(t *testing.T) {
	traces := generate(t, Config{Seed: 8, Scenarios: ScenarioWeights{ScenarioClean: 1}}, 50)
	withSecrets := 0
	for i := range traces {
		tr := &traces[i]
		if len(tr.Truth.Secrets) > 0 {
			withSecrets++
		}
		for _, secret := range tr.Truth.Secrets {
			if !traceCarries(tr, secret) {
				t.Errorf("trace %s: secret %q recorded but never sent", tr.ID, secret)
			}
		}
	}
	if withSecrets < 25 {
		t.Errorf("only %d of 50 traces carry sensitive-looking payloads", withSecrets)
	}
}

func traceCarries(tr *Trace, needle string) bool {
	for i := range tr.Spans {
		if spanCarries(&tr.Spans[i], needle) {
			return true
		}
	}
	return false
}

func TestToolsPerTraceScalesTheTrace(t *testing.T) {
	small := generate(t, Config{Seed: 2, ToolsPerTrace: 4, Scenarios: ScenarioWeights{ScenarioClean: 1}}, 20)
	for _, tr := range small {
		if tr.Truth.Calls != 4 || tr.Truth.ToolAttempts != 4 {
			t.Fatalf("calls %d attempts %d, want 4", tr.Truth.Calls, tr.Truth.ToolAttempts)
		}
	}
}

// TestStalePairsComeInterleaved: with StalePairs 4 a stale_cache draw yields four pairs,
// each stale trace with its own warm trace, in an order where at least one stale trace
// precedes the trace it copied; the same seed gives the same order. One pair (the
// default) is warm trace first, as it always was.
func TestStalePairsComeInterleaved(t *testing.T) {
	cfg := Config{Seed: 9, Scenarios: ScenarioWeights{ScenarioStaleCache: 1}, StalePairs: 4}
	traces := generate(t, cfg, 8)
	if len(traces) != 8 {
		t.Fatalf("one draw of 4 pairs gave %d traces, want 8", len(traces))
	}
	position := map[string]int{}
	for i, tr := range traces {
		position[tr.Truth.TraceID] = i
	}
	staleFirst := 0
	for i, tr := range traces {
		if tr.Truth.WarmFor == "" {
			if tr.Truth.Scenario != ScenarioStaleCache {
				t.Errorf("trace %d: scenario %s, want stale_cache or its warm trace", i, tr.Truth.Scenario)
			}
			continue
		}
		stale, ok := position[tr.Truth.WarmFor]
		if !ok {
			t.Fatalf("warm trace %s is for %s, not in the draw", tr.Truth.TraceID, tr.Truth.WarmFor)
		}
		if stale < i {
			staleFirst++
		}
	}
	if staleFirst == 0 {
		t.Error("no stale trace comes before the trace it copied")
	}
	if again := generate(t, cfg, 8); !reflect.DeepEqual(traces, again) {
		t.Error("one seed produced two different interleavings")
	}

	one := generate(t, Config{Seed: 9, Scenarios: ScenarioWeights{ScenarioStaleCache: 1}}, 2)
	if one[0].Truth.WarmFor != one[1].Truth.TraceID {
		t.Errorf("one pair: want the warm trace first, got %s then %s", one[0].Truth.Scenario, one[1].Truth.Scenario)
	}
}

func TestStalePairsBounded(t *testing.T) {
	for _, n := range []int{-1, MaxStalePairs + 1} {
		if _, err := NewGenerator(Config{StalePairs: n}); err == nil || !strings.Contains(err.Error(), "stale pairs must be between 1 and 64") {
			t.Errorf("StalePairs %d: error %v", n, err)
		}
	}
}
