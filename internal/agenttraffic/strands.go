package agenttraffic

import (
	"time"
)

// Strands Agents (@strands-agents/sdk 1.19, testdata/sdk/strands*.jsonl): an invoke_agent
// root, one execute_agent_loop_cycle per model turn holding its chat span and its
// execute_tool spans. A tool span ends OK whether the tool worked or not: only
// gen_ai.tool.status tells. Its arguments travel only in its gen_ai.tool.message event, its
// answer (result or error text) only in its gen_ai.choice event. An executor retry
// (AfterToolCallEvent with retry set) is a sibling span with the same call id.

// tokenUsage sums the tokens of model calls: Strands reports them per chat span and per
// agent.
type tokenUsage struct {
	in, out int64
}

func (u tokenUsage) add(in, out int64) tokenUsage { return tokenUsage{u.in + in, u.out + out} }

// strandsAttrs appends Strands' usage attributes, old and new names both, to lead.
func (u tokenUsage) strandsAttrs(lead ...Attr) []Attr {
	return append(lead, Int("gen_ai.usage.prompt_tokens", u.in), Int("gen_ai.usage.input_tokens", u.in),
		Int("gen_ai.usage.completion_tokens", u.out), Int("gen_ai.usage.output_tokens", u.out),
		Int("gen_ai.usage.total_tokens", u.in+u.out))
}

// eventTime is the ISO time Strands writes into gen_ai.event.start_time / end_time.
func eventTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// systemPrompt is the agent's system prompt; it names no tool payload.
func systemPrompt(agent string) string {
	return "You are the " + agent + ". Use the tools to do what the user asks, then answer briefly."
}

// strandsAgentAttrs are an invoke_agent span's attributes known when it starts; the end
// time and the usage follow when it ends.
func (r *renderer) strandsAgentAttrs(name string, start time.Time) []Attr {
	tools := make([]any, 0, len(catalog))
	for _, t := range catalog {
		tools = append(tools, t.name)
	}
	return []Attr{Str("gen_ai.operation.name", "invoke_agent"), Str("gen_ai.system", "strands-agents"),
		Str("gen_ai.agent.name", name), Str("name", "invoke_agent "+name), Str("gen_ai.agent.id", "agent"),
		Str("gen_ai.request.model", r.plan.model), Str("gen_ai.agent.tools", r.js(tools)),
		Str("system_prompt", r.js(systemPrompt(name))), Str("gen_ai.event.start_time", eventTime(start))}
}

func (r *renderer) strandsAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	attrs := []Attr{Str("gen_ai.operation.name", "execute_tool"), Str("gen_ai.system", "strands-agents"),
		Str("gen_ai.tool.name", c.tool.name), Str("gen_ai.tool.call.id", c.callID),
		Str("gen_ai.event.start_time", eventTime(a.start)), Str("gen_ai.event.end_time", eventTime(a.end))}
	events := []Event{{Name: "gen_ai.tool.message", Time: a.start, Attrs: []Attr{Str("role", "tool"),
		Str("content", r.js(a.args)), Str("id", c.callID)}}}
	status := Status{Code: StatusOK}
	switch a.status {
	case AttemptUnknown:
		status = Status{}
	case AttemptOK:
		attrs = append(attrs, Str("gen_ai.tool.status", "success"))
		events = append(events, r.strandsToolChoice(c, r.js(a.result), a.end))
	default:
		// A thrown error and an MCP isError result end alike: the text is the answer.
		attrs = append(attrs, Str("gen_ai.tool.status", "error"))
		events = append(events, r.strandsToolChoice(c, a.failText, a.end))
	}
	return attemptSpan{name: "execute_tool " + c.tool.name, status: status, attrs: attrs, events: events}
}

func (r *renderer) strandsToolChoice(c *plannedCall, text string, t time.Time) Event {
	return Event{Name: "gen_ai.choice", Time: t, Attrs: []Attr{
		Str("message", r.js([]any{payload{"text": text}})), Str("id", c.callID)}}
}

// strandsReply is what call c gave back to the model: its result as text, or its error
// text; ok is false when nothing came back.
func (r *renderer) strandsReply(c *plannedCall) (text, status string, ok bool) {
	a := c.last()
	switch {
	case a.status == AttemptOK && a.result != nil:
		return r.js(a.result), "success", true
	case a.status == AttemptError || a.status == AttemptTimeout:
		return a.failText, "error", true
	}
	return "", "", false
}

// strandsChatEvents are a chat span's events for turn tr: the system prompt, the user's
// request, the step it replays, and the model's choice.
func (r *renderer) strandsChatEvents(tr turn, start, end time.Time) []Event {
	events := []Event{{Name: "gen_ai.system.message", Time: start, Attrs: []Attr{
		Str("content", r.js([]any{payload{"text": systemPrompt(r.plan.agent)}}))}}, r.strandsUser(start)}
	events = append(events, r.strandsHistory(tr.history, start)...)
	msg, stop := []any{payload{"text": r.answer}}, "endTurn"
	if len(tr.calls) > 0 {
		msg, stop = msg[:0], "toolUse"
		for _, c := range tr.calls {
			msg = append(msg, payload{"type": "toolUse", "name": c.tool.name, "toolUseId": c.callID, "input": askedArgs(c)})
		}
	}
	return append(events, Event{Name: "gen_ai.choice", Time: end, Attrs: []Attr{
		Str("finish_reason", stop), Str("message", r.js(msg))}})
}

// strandsCycleEvents are an event loop cycle's events: the conversation it starts from,
// none in the first cycle.
func (r *renderer) strandsCycleEvents(tr turn, t time.Time) []Event {
	if !r.copies || tr.history == nil {
		return nil
	}
	return append([]Event{r.strandsUser(t)}, r.strandsHistory(tr.history, t)...)
}

// strandsHistory replays step h: the assistant message asking for its calls, and one tool
// message with their results.
func (r *renderer) strandsHistory(h *plannedStep, t time.Time) []Event {
	if h == nil {
		return nil
	}
	uses, results := []any{}, []any{}
	for _, c := range h.calls {
		uses = append(uses, payload{"toolUse": payload{"name": c.tool.name, "toolUseId": c.callID, "input": askedArgs(c)}})
		if text, status, ok := r.strandsReply(c); ok {
			results = append(results, payload{"toolResult": payload{"toolUseId": c.callID, "status": status,
				"content": []any{payload{"text": text}}}})
		}
	}
	events := []Event{{Name: "gen_ai.assistant.message", Time: t, Attrs: []Attr{Str("content", r.js(uses))}}}
	if len(results) > 0 {
		events = append(events, Event{Name: "gen_ai.tool.message", Time: t, Attrs: []Attr{Str("content", r.js(results))}})
	}
	return events
}
