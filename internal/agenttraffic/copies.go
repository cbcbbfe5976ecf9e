package agenttraffic

import (
	"strconv"
	"time"
)

// This file writes the payload copies of conversation.go in each instrumentation's own
// format (the framework shapes' own formats are in their files). Claude Code and the
// attempt record send none: Claude Code logs prompts only when
// asked to (OTEL_LOG_USER_PROMPTS), and the attempt record carries hashes, no payload.

// modelCopies are the attributes and events a model span of turn tr carries.
func (r *renderer) modelCopies(tr turn, finish string, start, end time.Time) ([]Attr, []Event) {
	if !r.copies {
		return nil, nil
	}
	switch r.plan.shape {
	case ShapeGenAI, ShapeMastra, ShapeLogfireMCP:
		return []Attr{Str("gen_ai.input.messages", r.js(r.semconvRequest(tr))),
			Str("gen_ai.output.messages", r.js([]any{r.semconvReply(tr)}))}, nil
	case ShapeMCP:
		return nil, r.strandsEvents(tr, start, end)
	case ShapeVercelV6:
		return r.vercelModelCopies(tr), nil
	case ShapeOpenInference:
		return r.openinferenceModelCopies(tr, finish), nil
	case ShapeOpenLLMetryMCP:
		return r.openllmetryModelCopies(tr, finish), nil
	case ShapeStrands:
		return nil, r.strandsChatEvents(tr, start, end)
	case ShapeOpenAIAgents:
		return r.openaiAgentsModelCopies(tr, finish), nil
	case ShapeUnlisted:
		return r.unlistedModelCopies(tr, finish), nil
	}
	return nil, nil
}

// agentCopies are the attributes and events the root agent span carries: the user's
// request and the final answer.
func (r *renderer) agentCopies(start, end time.Time) ([]Attr, []Event) {
	if !r.copies {
		return nil, nil
	}
	switch r.plan.shape {
	case ShapeGenAI, ShapeLogfireMCP:
		return r.semconvAgent(), nil
	case ShapeMastra:
		return append(r.semconvAgent(), Str("mastra.model_generation.output",
			r.mastraOutput(r.plan.lastToolStep(), r.answer))), nil
	case ShapeMCP:
		return nil, []Event{r.strandsUser(start), r.strandsChoice("end_turn", []any{payload{"text": r.answer}}, end)}
	case ShapeVercelV6:
		return []Attr{Str("ai.prompt", r.js(payload{"prompt": r.prompt})), Str("ai.response.text", r.answer)}, nil
	case ShapeOpenInference:
		return []Attr{Str("input.value", r.js(payload{"task": r.prompt})), Str("input.mime_type", "application/json"),
			Str("output.value", r.answer), Str("output.mime_type", "text/plain")}, nil
	case ShapeOpenLLMetryMCP:
		return []Attr{Str("traceloop.span.kind", "workflow"), Str("traceloop.entity.name", r.plan.agent),
			Str("traceloop.entity.input", r.js(payload{"args": []any{}, "kwargs": payload{"request": r.prompt}})),
			Str("traceloop.entity.output", r.js(r.answer))}, nil
	case ShapeStrands:
		return nil, []Event{r.strandsUser(start), {Name: "gen_ai.choice", Time: end,
			Attrs: []Attr{Str("message", r.answer), Str("finish_reason", "endTurn")}}}
	case ShapeOpenInferenceLangChain:
		return r.langchainAgentCopies(), nil
	case ShapeOpenAIAgents:
		return []Attr{Str("input.value", r.js([]any{payload{"role": "user", "content": r.prompt}})),
			Str("input.mime_type", "application/json"), Str("output.value", r.answer)}, nil
	case ShapeUnlisted:
		return r.unlistedAgentCopies(), nil
	}
	return nil, nil
}

// stepCopies are what a step span carries: Mastra's model step output.
func (r *renderer) stepCopies(s *plannedStep, text string) []Attr {
	if !r.copies || r.plan.shape != ShapeMastra {
		return nil
	}
	return []Attr{Str("mastra.model_step.output", r.mastraOutput(s, text))}
}

func (r *renderer) js(v any) string { return r.traits.json.text(v) }

// ---- OTel GenAI semconv: gen_ai.input.messages / gen_ai.output.messages ----

func (r *renderer) semconvAgent() []Attr {
	user := payload{"role": "user", "parts": []any{payload{"type": "text", "content": r.prompt}}}
	answer := payload{"role": "assistant", "parts": []any{payload{"type": "text", "content": r.answer}}, "finish_reason": "stop"}
	return []Attr{Str("gen_ai.input.messages", r.js([]any{user})), Str("gen_ai.output.messages", r.js([]any{answer}))}
}

func (r *renderer) semconvRequest(tr turn) []any {
	msgs := []any{payload{"role": "user", "parts": []any{payload{"type": "text", "content": r.prompt}}}}
	if tr.history == nil {
		return msgs
	}
	calls, results := []any{}, []any{}
	for _, c := range tr.history.calls {
		calls = append(calls, semconvCall(c))
		if v, _, ok := reply(c); ok {
			results = append(results, payload{"type": "tool_call_response", "id": modelCallID(c), "response": v})
		}
	}
	msgs = append(msgs, payload{"role": "assistant", "parts": calls})
	if len(results) > 0 {
		msgs = append(msgs, payload{"role": "tool", "parts": results})
	}
	return msgs
}

// semconvReply is the model's output message; finish_reason takes the semconv values
// (tool_call, stop), not the provider's (tool_calls).
func (r *renderer) semconvReply(tr turn) payload {
	if len(tr.calls) == 0 {
		return payload{"role": "assistant", "parts": []any{payload{"type": "text", "content": r.answer}}, "finish_reason": "stop"}
	}
	parts := []any{}
	for _, c := range tr.calls {
		parts = append(parts, semconvCall(c))
	}
	return payload{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}
}

func semconvCall(c *plannedCall) payload {
	return payload{"type": "tool_call", "id": modelCallID(c), "name": c.tool.name, "arguments": askedArgs(c)}
}

// mastraOutput is a Mastra model step's (or generation's) output: its text and the tool
// calls and results of step s.
func (r *renderer) mastraOutput(s *plannedStep, text string) string {
	calls, results := []any{}, []any{}
	if s != nil {
		for _, c := range s.calls {
			id := modelCallID(c)
			calls = append(calls, payload{"type": "tool-call", "toolCallId": id, "toolName": c.tool.name, "args": askedArgs(c)})
			if v, _, ok := reply(c); ok {
				results = append(results, payload{"type": "tool-result", "toolCallId": id, "toolName": c.tool.name, "result": v})
			}
		}
	}
	return r.js(payload{"text": text, "toolCalls": calls, "toolResults": results})
}

// ---- Strands Agents: one span event per message ----

func (r *renderer) strandsEvents(tr turn, start, end time.Time) []Event {
	events := []Event{r.strandsUser(start)}
	if h := tr.history; h != nil {
		uses := []any{}
		for _, c := range h.calls {
			uses = append(uses, strandsToolUse(c))
		}
		events = append(events, Event{Name: "gen_ai.assistant.message", Time: start, Attrs: []Attr{Str("content", r.js(uses))}})
		for _, c := range h.calls {
			v, failed, ok := reply(c)
			if !ok {
				continue
			}
			status, content := "success", payload{"json": v}
			if failed {
				status = "error"
			}
			if s, isText := v.(string); isText {
				content = payload{"text": s}
			}
			result := payload{"toolResult": payload{"toolUseId": modelCallID(c), "status": status, "content": []any{content}}}
			events = append(events, Event{Name: "gen_ai.tool.message", Time: start, Attrs: []Attr{Str("role", "tool"),
				Str("content", r.js([]any{result})), Str("id", modelCallID(c))}})
		}
	}
	msg := []any{payload{"text": r.answer}}
	stop := "end_turn"
	if len(tr.calls) > 0 {
		msg, stop = msg[:0], "tool_use"
		for _, c := range tr.calls {
			msg = append(msg, strandsToolUse(c))
		}
	}
	return append(events, r.strandsChoice(stop, msg, end))
}

func (r *renderer) strandsUser(t time.Time) Event {
	return Event{Name: "gen_ai.user.message", Time: t, Attrs: []Attr{Str("content", r.js([]any{payload{"text": r.prompt}}))}}
}

func (r *renderer) strandsChoice(stop string, msg []any, t time.Time) Event {
	return Event{Name: "gen_ai.choice", Time: t, Attrs: []Attr{Str("finish_reason", stop), Str("message", r.js(msg))}}
}

func strandsToolUse(c *plannedCall) payload {
	return payload{"toolUse": payload{"toolUseId": modelCallID(c), "name": c.tool.name, "input": askedArgs(c)}}
}

// ---- Vercel AI SDK v6: ai.prompt.messages / ai.response.toolCalls ----

func (r *renderer) vercelModelCopies(tr turn) []Attr {
	msgs := []any{payload{"role": "user", "content": []any{payload{"type": "text", "text": r.prompt}}}}
	if h := tr.history; h != nil {
		calls, results := []any{}, []any{}
		for _, c := range h.calls {
			id := modelCallID(c)
			calls = append(calls, payload{"type": "tool-call", "toolCallId": id, "toolName": c.tool.name, "input": askedArgs(c)})
			v, failed, ok := reply(c)
			if !ok {
				continue
			}
			out := payload{"type": "json", "value": v}
			if s, isText := v.(string); isText && failed {
				out = payload{"type": "error-text", "value": s}
			}
			results = append(results, payload{"type": "tool-result", "toolCallId": id, "toolName": c.tool.name, "output": out})
		}
		msgs = append(msgs, payload{"role": "assistant", "content": calls})
		if len(results) > 0 {
			msgs = append(msgs, payload{"role": "tool", "content": results})
		}
	}
	attrs := []Attr{Str("ai.prompt.messages", r.js(msgs))}
	if len(tr.calls) == 0 {
		return append(attrs, Str("ai.response.text", r.answer))
	}
	calls := []any{}
	for _, c := range tr.calls {
		calls = append(calls, payload{"toolCallId": modelCallID(c), "toolName": c.tool.name, "input": r.js(askedArgs(c))})
	}
	return append(attrs, Str("ai.response.toolCalls", r.js(calls)))
}

// ---- OpenInference: input.value / output.value and flattened llm.*_messages ----

func (r *renderer) openinferenceModelCopies(tr turn, finish string) []Attr {
	request, answer := r.chatRequest(tr), r.chatReply(tr)
	msgs := make([]any, 0, len(request))
	for _, m := range request {
		msgs = append(msgs, r.openaiMessage(m))
	}
	attrs := []Attr{Str("input.value", r.js(payload{"model": r.plan.model, "messages": msgs})),
		Str("input.mime_type", "application/json"),
		Str("output.value", r.js(payload{"model": r.plan.model, "choices": []any{payload{"index": 0,
			"finish_reason": finish, "message": r.openaiMessage(answer)}}})),
		Str("output.mime_type", "application/json")}
	for i, m := range request {
		attrs = r.openinferenceMessage(attrs, "llm.input_messages."+strconv.Itoa(i)+".message.", m)
	}
	return r.openinferenceMessage(attrs, "llm.output_messages.0.message.", answer)
}

func (r *renderer) openaiMessage(m chatMessage) payload {
	out := payload{"role": m.role}
	if m.content != "" {
		out["content"] = m.content
	}
	if m.toolCallID != "" {
		out["tool_call_id"] = m.toolCallID
	}
	if len(m.calls) > 0 {
		calls := []any{}
		for _, c := range m.calls {
			calls = append(calls, payload{"id": modelCallID(c), "type": "function",
				"function": payload{"name": c.tool.name, "arguments": r.js(askedArgs(c))}})
		}
		out["tool_calls"] = calls
	}
	return out
}

func (r *renderer) openinferenceMessage(attrs []Attr, prefix string, m chatMessage) []Attr {
	attrs = append(attrs, Str(prefix+"role", m.role))
	if m.content != "" {
		attrs = append(attrs, Str(prefix+"content", m.content))
	}
	if m.toolCallID != "" {
		attrs = append(attrs, Str(prefix+"tool_call_id", m.toolCallID))
	}
	for j, c := range m.calls {
		p := prefix + "tool_calls." + strconv.Itoa(j) + ".tool_call."
		attrs = append(attrs, Str(p+"id", modelCallID(c)), Str(p+"function.name", c.tool.name),
			Str(p+"function.arguments", r.js(askedArgs(c))))
	}
	return attrs
}

// ---- OpenLLMetry: gen_ai.prompt.N.* / gen_ai.completion.N.* ----

func (r *renderer) openllmetryModelCopies(tr turn, finish string) []Attr {
	var attrs []Attr
	for i, m := range r.chatRequest(tr) {
		attrs = r.openllmetryMessage(attrs, "gen_ai.prompt."+strconv.Itoa(i)+".", m)
	}
	attrs = r.openllmetryMessage(attrs, "gen_ai.completion.0.", r.chatReply(tr))
	return append(attrs, Str("gen_ai.completion.0.finish_reason", finish))
}

func (r *renderer) openllmetryMessage(attrs []Attr, prefix string, m chatMessage) []Attr {
	attrs = append(attrs, Str(prefix+"role", m.role))
	if m.content != "" {
		attrs = append(attrs, Str(prefix+"content", m.content))
	}
	if m.toolCallID != "" {
		attrs = append(attrs, Str(prefix+"tool_call_id", m.toolCallID))
	}
	for j, c := range m.calls {
		p := prefix + "tool_calls." + strconv.Itoa(j) + "."
		attrs = append(attrs, Str(p+"id", modelCallID(c)), Str(p+"name", c.tool.name), Str(p+"arguments", r.js(askedArgs(c))))
	}
	return attrs
}

// ---- failed attempts and their HTTP sends ----

// exceptionEvent records a failed attempt's exception as the shape's SDK does: the
// OpenInference bridges write its message only, LangChain's with the stack, the Agents SDK's
// wrapped in its tool error.
func (r *renderer) exceptionEvent(c *plannedCall, a *plannedAttempt) Event {
	msg := exceptionText(c, a)
	switch r.plan.shape {
	case ShapeOpenInferenceLangChain:
		return Event{Name: "exception", Time: a.end, Attrs: []Attr{Str("exception.message", langchainErrorText(msg))}}
	case ShapeOpenAIAgents:
		return Event{Name: "exception", Time: a.end, Attrs: []Attr{Str("exception.message", r.openaiToolError(c, msg))}}
	}
	typ := "Error"
	if a.status == AttemptTimeout {
		typ = "TimeoutError"
	}
	return Event{Name: "exception", Time: a.end, Attrs: []Attr{Str("exception.type", typ), Str("exception.message", msg)}}
}

// exceptionText is a failed attempt's exception message: its failure text quoting the
// argument the failing request was about.
func exceptionText(c *plannedCall, a *plannedAttempt) string {
	msg := a.failText
	for _, k := range sortedKeys(a.args) {
		if v, ok := a.args[k].(string); ok && len(v) >= minRawValue && v != c.asset {
			msg += " (" + k + "=" + v + ")"
			break
		}
	}
	return msg
}
