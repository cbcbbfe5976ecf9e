package agenttraffic

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// unlistedScenarios are the scenarios each unlisted shape expresses exactly.
var unlistedScenarios = map[Shape][]Scenario{
	// No side effect, idempotency key or read asset (the application's keys are attribute
	// sources), no agent level a rule names, no attempt numbers.
	ShapeUnlisted: {ScenarioClean, ScenarioTransportStorm, ScenarioExecutorStorm, ScenarioAgentStorm,
		ScenarioChangedArguments, ScenarioRetryAfterSuccess, ScenarioExhaustedGreen, ScenarioMCPIsError,
		ScenarioStaleCache, ScenarioResultDrift},
	// Without arguments, results or a call id retry_storm can read, only what (parent, tool)
	// tells: one call's tries under one step.
	ShapeUnlistedOffered: {ScenarioClean, ScenarioTransportStorm, ScenarioExecutorStorm, ScenarioRetryAfterSuccess,
		ScenarioExhaustedGreen},
}

// TestUnlistedShapesRefuseWhatTheyCannotExpress: Validate accepts an unlisted shape for
// exactly its scenarios; each accepted one generates valid span trees in that shape.
func TestUnlistedShapesRefuseWhatTheyCannotExpress(t *testing.T) {
	for _, shape := range UnlistedShapes() {
		for _, sc := range AllScenarios() {
			cfg := Config{Seed: 2, Shapes: []Shape{shape}, Scenarios: ScenarioWeights{sc: 1}, ToolsPerTrace: 6}
			err := cfg.Validate()
			if !slices.Contains(unlistedScenarios[shape], sc) {
				if err == nil || !strings.Contains(err.Error(), "scenario "+string(sc)+" needs one of the shapes") {
					t.Errorf("%s/%s: Validate = %v, want a refusal naming the scenario", shape, sc, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s/%s: Validate = %v", shape, sc, err)
				continue
			}
			for _, tr := range generate(t, cfg, 3) {
				if tr.Truth.Shape != shape {
					t.Errorf("%s/%s: generated a %s trace", shape, sc, tr.Truth.Shape)
				}
				checkSpanTree(t, &tr)
			}
		}
	}
}

// chatDoc is what the unlisted shape's model attributes hold, in OpenAI's chat vocabulary.
type chatDoc struct {
	Messages []chatDocMessage `json:"messages"`
	Choices  []struct {
		Message chatDocMessage `json:"message"`
	} `json:"choices"`
}

type chatDocMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func chatOf(t *testing.T, s *Span, key string) chatDoc {
	t.Helper()
	var doc chatDoc
	if err := json.Unmarshal([]byte(strAttr(s, key)), &doc); err != nil {
		t.Fatalf("span %q: %s is not a chat document: %v", s.Name, key, err)
	}
	return doc
}

// TestUnlistedToolSpansAnswerTheModel: every tool span carries the id of a call a model
// span's reply asked for, with the arguments the model gave (executor retries aside, which
// may correct them), and what a tool span returned last is what the next request's tool
// message says. A thrown failure is status ERROR with an exception event; an isError
// result leaves the status unset and is the span's output, and, where it ends the call,
// the content of the tool message the model reads next.
func TestUnlistedToolSpansAnswerTheModel(t *testing.T) {
	w := ScenarioWeights{}
	for _, sc := range unlistedScenarios[ShapeUnlisted] {
		w[sc] = 1
	}
	isErrorReplies, thrown := 0, 0
	for _, tr := range generate(t, Config{Seed: 6, Shapes: []Shape{ShapeUnlisted}, Scenarios: w, ToolsPerTrace: 6}, 120) {
		asked := map[string]string{}   // call id → arguments
		replies := map[string]string{} // call id → the tool message's content
		for i := range tr.Spans {
			s := &tr.Spans[i]
			if s.Name != "acme.llm.generate" {
				continue
			}
			for _, c := range chatOf(t, s, "acme.llm.response").Choices[0].Message.ToolCalls {
				asked[c.ID] = c.Function.Arguments
			}
			for _, m := range chatOf(t, s, "acme.llm.request").Messages {
				if m.Role == "tool" {
					replies[m.ToolCallID] = m.Content
				}
			}
		}
		last := map[string]*Span{}
		for i := range tr.Spans {
			s := &tr.Spans[i]
			if !isToolAttempt(ShapeUnlisted, s) {
				continue
			}
			id := strAttr(s, "acme.tool.call_id")
			args, ok := asked[id]
			if !ok {
				t.Fatalf("trace %s: tool span %q carries %q, which no model asked for", tr.ID, s.Name, id)
			}
			if _, retry := last[id]; !retry && strAttr(s, "acme.tool.input") != args {
				t.Errorf("trace %s: %q ran with %s, the model asked for %s", tr.ID, s.Name, strAttr(s, "acme.tool.input"), args)
			}
			last[id] = s
			switch {
			case s.Status.Code == StatusError:
				thrown++
				if len(s.Events) != 1 || s.Events[0].Name != "exception" || strAttr(s, "acme.tool.output") != "" {
					t.Errorf("trace %s: thrown failure of %q with events %v, output %q", tr.ID, s.Name, s.Events, strAttr(s, "acme.tool.output"))
				}
			case flaggedError(strAttr(s, "acme.tool.output")):
				if s.Status.Code != StatusUnset {
					t.Errorf("trace %s: isError result of %q with status %v", tr.ID, s.Name, s.Status)
				}
			}
		}
		for id, s := range last {
			reply, ok := replies[id]
			if !ok {
				// The final turn's request is the only one that replays the last step.
				continue
			}
			out := strAttr(s, "acme.tool.output")
			if s.Status.Code == StatusError {
				out = s.Status.Message
			}
			if reply != out {
				t.Errorf("trace %s: the model was told %q of %s, its last try returned %q", tr.ID, reply, id, out)
			}
			if flaggedError(reply) {
				isErrorReplies++
			}
		}
	}
	if isErrorReplies == 0 || thrown == 0 {
		t.Errorf("%d isError tool messages and %d thrown failures: want both", isErrorReplies, thrown)
	}
}

// TestUnlistedOfferedRecordsNoContent: with content capture off, every model span lists
// every tool offered as an OpenAI function definition, and no span carries a message, a
// payload or a raw value of one; no step calls one tool twice unless as tries of one call,
// which (parent, tool) is all retry_storm can tell them by.
func TestUnlistedOfferedRecordsNoContent(t *testing.T) {
	w := ScenarioWeights{}
	for _, sc := range unlistedScenarios[ShapeUnlistedOffered] {
		w[sc] = 1
	}
	var names []string
	for _, tool := range catalog {
		names = append(names, tool.name)
	}
	for _, tr := range generate(t, Config{Seed: 7, Shapes: []Shape{ShapeUnlistedOffered}, Scenarios: w}, 60) {
		if len(tr.Truth.Secrets) > 0 {
			t.Errorf("trace %s sends raw values %v", tr.ID, tr.Truth.Secrets)
		}
		calls := map[SpanID]map[string]string{} // parent → tool → call id
		for i := range tr.Spans {
			s := &tr.Spans[i]
			for _, k := range []string{"acme.llm.request", "acme.llm.response", "acme.tool.input", "acme.tool.output",
				"acme.agent.prompt", "acme.agent.answer"} {
				if _, ok := s.Attr(k); ok {
					t.Errorf("trace %s: span %q carries %s with content capture off", tr.ID, s.Name, k)
				}
			}
			if len(s.Events) > 0 {
				t.Errorf("trace %s: span %q has events %v", tr.ID, s.Name, s.Events)
			}
			if s.Name == "acme.llm.generate" {
				var defs []struct {
					Type     string `json:"type"`
					Function struct {
						Name       string         `json:"name"`
						Parameters map[string]any `json:"parameters"`
					} `json:"function"`
				}
				if err := json.Unmarshal([]byte(strAttr(s, "acme.llm.tools")), &defs); err != nil {
					t.Fatalf("acme.llm.tools: %v", err)
				}
				var offered []string
				for _, d := range defs {
					if d.Type != "function" || d.Function.Parameters == nil {
						t.Errorf("definition %+v", d)
					}
					offered = append(offered, d.Function.Name)
				}
				if !slices.Equal(offered, names) {
					t.Errorf("offered %v, want %v", offered, names)
				}
			}
			if !isToolAttempt(ShapeUnlistedOffered, s) {
				continue
			}
			if calls[s.Parent] == nil {
				calls[s.Parent] = map[string]string{}
			}
			tool, id := strings.TrimPrefix(s.Name, "acme.tool "), strAttr(s, "acme.tool.call_id")
			if prev, ok := calls[s.Parent][tool]; ok && prev != id {
				t.Errorf("trace %s: two calls of %s under one step", tr.ID, tool)
			}
			calls[s.Parent][tool] = id
		}
	}
}
