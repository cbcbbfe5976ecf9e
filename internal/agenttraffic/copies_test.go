package agenttraffic

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// shapeTraffic draws traces of one shape over every scenario it can express.
func shapeTraffic(t *testing.T, shape Shape, n int) []Trace {
	t.Helper()
	w := ScenarioWeights{ScenarioClean: 3}
	for _, sc := range AllScenarios() {
		if sc != ScenarioClean && scenarioSupports(sc, shape) {
			w[sc] = 1
		}
	}
	return generate(t, Config{Seed: 5, Shapes: []Shape{shape}, Scenarios: w, ToolsPerTrace: 6}, n)
}

// toolRules are retry_storm's default tool-span rules (toolspan.DefaultConfig), which this
// package cannot import: a copy must never make a span look like a tool attempt.
func isToolSpan(s *Span) bool {
	for _, rule := range [][2]string{{"gen_ai.operation.name", "execute_tool"}, {"mastra.span.type", "tool_call"},
		{"mcp.method.name", "tools/call"}, {"traceloop.span.kind", "tool"}, {"openinference.span.kind", "TOOL"}} {
		if v, ok := s.Attr(rule[0]); ok && v.Str == rule[1] {
			return true
		}
	}
	if _, ok := s.Attr("tool_name"); ok {
		return true
	}
	return s.Name == "ai.toolCall" || s.Name == "claude_code.tool" || strings.HasPrefix(s.Name, "MCP request: tools/call")
}

// toolPayloadKeys are the attributes where tool spans carry raw payloads.
var toolPayloadKeys = []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "ai.toolCall.args",
	"ai.toolCall.result", "input.value", "output.value", "traceloop.entity.input", "traceloop.entity.output",
	"request", "response", "tool_input", "tool_response", "idempotency_key", "acme.tool.input", "acme.tool.output"}

// isAttemptSpan reports a tool span of tr: one a default rule names, or, in the unlisted
// shapes, one only following the model finds.
func isAttemptSpan(tr *Trace, s *Span) bool { return isToolSpan(s) || isToolAttempt(tr.Truth.Shape, s) }

// toolPayloadEvents are the event attributes where tool spans carry raw payloads (Strands).
var toolPayloadEvents = [][2]string{{"gen_ai.tool.message", "content"}, {"gen_ai.choice", "message"}}

// toolPayloads lists the payload values tool span s carries.
func toolPayloads(s *Span) []Value {
	var out []Value
	for _, k := range toolPayloadKeys {
		if a, ok := s.Attr(k); ok {
			out = append(out, a)
		}
	}
	for _, e := range toolPayloadEvents {
		if v := eventAttr(s, e[0], e[1]); v != "" {
			out = append(out, Value{Kind: ValueString, Str: v})
		}
	}
	return out
}

// outsidePayloads are the strings of a trace that its tool-span payload attributes hold
// but that are not the tool's payload, or that the trace sends elsewhere by design: the
// envelope's method and tool names, asset names, span status messages.
func outsidePayloads(tr *Trace) map[string]bool {
	out := map[string]bool{"tools/call": true}
	for _, t := range catalog {
		out[t.name] = true
	}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		out[s.Status.Message] = true
		// A failed attempt's answer is its error text, no payload: the Agents SDK's
		// errorFunction output, Strands' choice.
		if s.Status.Code == StatusError {
			out[strAttr(s, "output.value")] = true
		}
		for _, v := range toolMessageEnvelope(strAttr(s, "output.value")) {
			out[v] = true
		}
		if strAttr(s, "gen_ai.tool.status") == "error" {
			for _, v := range valueLeaves(Value{Kind: ValueString, Str: eventAttr(s, "gen_ai.choice", "message")}, nil) {
				out[v] = true
			}
		}
		if v, ok := s.Attr("retrystorm.read.asset"); ok {
			out[v.Str] = true
		}
		if v, ok := s.Attr("retrystorm.answer.cited_assets"); ok {
			for _, a := range v.Strs {
				out[a] = true
			}
		}
	}
	return out
}

// toolMessageEnvelope lists the leaves of the LangChain ToolMessage an output.value holds,
// its content (the tool's result) left out: constructor names and the call id.
func toolMessageEnvelope(output string) []string {
	var doc struct {
		Output map[string]any `json:"output"`
	}
	if json.Unmarshal([]byte(output), &doc) != nil || doc.Output == nil {
		return nil
	}
	kwargs, _ := doc.Output["kwargs"].(map[string]any)
	if _, ok := kwargs["content"]; !ok {
		return nil
	}
	delete(kwargs, "content")
	return jsonLeaves(doc.Output, nil)
}

// valueLeaves lists the leaves of an attribute value the way a reader of the span finds
// them: JSON texts are opened, JSON inside JSON too (an MCP result's text).
func valueLeaves(v Value, out []string) []string {
	switch v.Kind {
	case ValueString:
		var x any
		if err := json.Unmarshal([]byte(v.Str), &x); err == nil {
			if _, scalar := x.(string); !scalar {
				return jsonLeaves(x, out)
			}
		}
		if len(v.Str) >= minRawValue {
			out = append(out, v.Str)
		}
	case ValueMap:
		for _, a := range v.Map {
			out = valueLeaves(a.Value, out)
		}
	}
	return out
}

func jsonLeaves(x any, out []string) []string {
	switch t := x.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			out = jsonLeaves(t[k], out)
		}
	case []any:
		for _, e := range t {
			out = jsonLeaves(e, out)
		}
	case string:
		out = valueLeaves(Value{Kind: ValueString, Str: t}, out)
	case float64:
		out = payloadLeaves(valueOf(t).plain(), out)
	}
	return out
}

// TestTruthListsEveryRawValue holds truth.Secrets to what the spans carry, shape by shape:
// every listed value is sent, every raw leaf of a tool span's payload (8 bytes or more) is
// listed, and copies put some of them outside the tool spans.
func TestTruthListsEveryRawValue(t *testing.T) {
	for _, shape := range knownShapes() {
		t.Run(string(shape), func(t *testing.T) {
			outside, total := 0, 0
			for _, tr := range shapeTraffic(t, shape, 40) {
				listed, elsewhere := map[string]bool{}, outsidePayloads(&tr)
				for _, v := range tr.Truth.Secrets {
					listed[v] = true
					total++
					if !traceCarries(&tr, v) {
						t.Errorf("trace %s (%s): %q listed but never sent", tr.ID, tr.Truth.Scenario, v)
					}
				}
				for i := range tr.Spans {
					s := &tr.Spans[i]
					if !isAttemptSpan(&tr, s) {
						for _, v := range tr.Truth.Secrets {
							if spanCarries(s, v) {
								outside++
								break
							}
						}
						continue
					}
					for _, a := range toolPayloads(s) {
						for _, v := range valueLeaves(a, nil) {
							if !listed[v] && !elsewhere[v] {
								t.Errorf("trace %s (%s): span %q carries %q, which the truth does not list",
									tr.ID, tr.Truth.Scenario, s.Name, v)
							}
						}
					}
				}
			}
			switch shape {
			case ShapeAttemptRecord, ShapeUnlistedOffered:
				// The attempt record sends hashes only; content capture off sends no payload.
				if total != 0 {
					t.Errorf("%s sends no payload, yet the truth lists %d raw values", shape, total)
				}
			case ShapeClaudeCode:
				// No model copies; only a transport storm's HTTP sends name an argument.
			default:
				if outside == 0 {
					t.Errorf("no raw value outside the tool spans in %d listed: the copies are missing", total)
				}
			}
		})
	}
}

// TestCopiesCarryTheToolPayloads: in a clean trace every raw value of the tool spans is
// copied somewhere else (model, agent or HTTP spans), and the copies written as JSON are
// JSON.
func TestCopiesCarryTheToolPayloads(t *testing.T) {
	for _, shape := range knownShapes() {
		if shape == ShapeClaudeCode || shape == ShapeAttemptRecord || shape == ShapeUnlistedOffered {
			continue
		}
		t.Run(string(shape), func(t *testing.T) {
			gen, err := NewGenerator(Config{Seed: 9, Shapes: []Shape{shape}, Scenarios: ScenarioWeights{ScenarioClean: 1}, ToolsPerTrace: 5})
			if err != nil {
				t.Fatal(err)
			}
			tr := gen.Next()
			var copies []string
			for i := range tr.Spans {
				s := &tr.Spans[i]
				if isAttemptSpan(&tr, s) {
					continue
				}
				for _, a := range s.Attrs {
					copies = append(copies, a.Value.Str)
					copies = append(copies, a.Value.Strs...)
					checkJSONCopy(t, s, a)
				}
				for _, e := range s.Events {
					for _, a := range e.Attrs {
						copies = append(copies, a.Value.Str)
					}
				}
			}
			all := strings.Join(copies, "\n")
			if len(tr.Truth.Secrets) == 0 {
				t.Fatal("the trace sends no raw value")
			}
			for _, v := range tr.Truth.Secrets {
				// Idempotency keys are copied into HTTP headers only; MCP's sends are
				// JSON-RPC requests to the server, which carry none, and detached spans
				// have no HTTP span under them.
				if (shape == ShapeMCP || traitsOf(shape).detachedSpans) && strings.HasPrefix(v, "idem_") {
					continue
				}
				if !strings.Contains(all, v) {
					t.Errorf("raw value %q is on the tool spans only", v)
				}
			}
		})
	}
}

// checkJSONCopy: attributes the instrumentations write as JSON are valid JSON.
func checkJSONCopy(t *testing.T, s *Span, a Attr) {
	t.Helper()
	switch a.Key {
	case "gen_ai.input.messages", "gen_ai.output.messages", "mastra.model_step.output", "mastra.model_generation.output",
		"ai.prompt.messages", "ai.response.toolCalls", "ai.prompt", "traceloop.entity.input", "traceloop.entity.output",
		"acme.llm.request", "acme.llm.response", "acme.llm.tools", "acme.tool.input":
	default:
		if !strings.HasSuffix(a.Key, ".arguments") && !(a.Key == "input.value" && s.Name != "invoke_agent") {
			return
		}
	}
	if !json.Valid([]byte(a.Value.Str)) {
		t.Errorf("span %q: %s is not JSON: %s", s.Name, a.Key, a.Value.Str)
	}
}

// TestCopiesChangeNoTruth: the copies draw no randomness, so with or without them a run has
// the same traces, ids, times, statuses and truth, raw values included.
func TestCopiesChangeNoTruth(t *testing.T) {
	t.Run("mix", func(t *testing.T) { checkCopiesChangeNoTruth(t, Config{Seed: 3, EveryScenario: true}) })
	// unlisted_offered records no copy to leave off.
	for _, shape := range append(FrameworkShapes(), ShapeUnlisted) {
		t.Run(string(shape), func(t *testing.T) {
			w := ScenarioWeights{}
			for _, sc := range AllScenarios() {
				if scenarioSupports(sc, shape) {
					w[sc] = 1
				}
			}
			checkCopiesChangeNoTruth(t, Config{Seed: 3, Shapes: []Shape{shape}, Scenarios: w})
		})
	}
}

func checkCopiesChangeNoTruth(t *testing.T, cfg Config) {
	t.Helper()
	with := generate(t, cfg, 80)
	cfg.withoutCopies = true
	without := generate(t, cfg, 80)
	if len(with) != len(without) {
		t.Fatalf("%d traces with copies, %d without", len(with), len(without))
	}
	grew := 0
	for i := range with {
		a, b := with[i], without[i]
		if !reflect.DeepEqual(a.Truth, b.Truth) {
			t.Errorf("trace %d (%s, %s): truth differs with copies:\n%+v\n%+v", i, a.Truth.Shape, a.Truth.Scenario, a.Truth, b.Truth)
		}
		for j := range a.Spans {
			sa, sb := a.Spans[j], b.Spans[j]
			if isToolSpan(&sa) != isToolSpan(&sb) {
				t.Errorf("trace %d span %q: copies changed whether it reads as a tool attempt", i, sa.Name)
			}
			if len(sa.Attrs) > len(sb.Attrs) || len(sa.Events) > 0 {
				grew++
			}
			if !reflect.DeepEqual(sb.Attrs, sa.Attrs[:min(len(sb.Attrs), len(sa.Attrs))]) && !hasURLCopy(sa) {
				t.Errorf("trace %d span %q: copies changed an attribute the span had", i, sa.Name)
			}
			sa.Attrs, sa.Events, sb.Attrs, sb.Events = nil, nil, nil, nil
			if !reflect.DeepEqual(sa, sb) {
				t.Errorf("trace %d span %d: copies changed the span: %+v vs %+v", i, j, sa, sb)
			}
		}
	}
	if grew == 0 {
		t.Error("no span carries a copy")
	}
}

// hasURLCopy: an HTTP send's url.full is rewritten to name an argument.
func hasURLCopy(s Span) bool {
	_, ok := s.Attr("url.full")
	return ok
}
