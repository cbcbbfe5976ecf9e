package agenttraffic

// Acme Agents, a framework made up here, stands for the frameworks with tracing of their
// own that no recognition rule or attribute source of retry_storm names (Genkit and
// VoltAgent in testdata/sdk are such): retry_storm sees their tool calls only by following
// the model. An acme.agent.run root, one acme.agent.step per model turn holding its
// acme.llm.generate span and the turn's "acme.tool <tool>" spans, HTTP sends of tool code
// under those. Model spans list the tools offered (acme.llm.tools, OpenAI function
// definitions); with content capture on (unlisted) they also carry the request
// (acme.llm.request: OpenAI chat messages, role tool included) and the reply
// (acme.llm.response: a chat completion whose message holds tool_calls). A tool span carries
// the model's call id in acme.tool.call_id and, with content on, its arguments in
// acme.tool.input and its result in acme.tool.output. A thrown failure is status ERROR with
// the error as message (and an exception event); an MCP isError result is only the tool
// span's output and the tool message's content, status unset. With content capture off
// (unlisted_offered) no payload is recorded anywhere.

const unlistedScope = "@acme/agents"

// unlistedToolDefinitions are the tools every model call is offered, as the framework
// writes them (JSON.stringify, so compact).
var unlistedToolDefinitions = func() string {
	defs := make([]any, 0, len(catalog))
	for _, t := range catalog {
		defs = append(defs, payload{"type": "function", "function": payload{"name": t.name, "parameters": payload{}}})
	}
	return jsonCompact.text(defs)
}()

func (r *renderer) unlistedAgentAttrs() []Attr {
	return []Attr{Str("acme.agent.name", r.plan.agent), Str("acme.agent.run_id", r.plan.runID)}
}

func (r *renderer) unlistedModelAttrs(in, out int64, finish string) []Attr {
	return []Attr{Str("acme.llm.model", r.plan.model), Str("acme.llm.finish_reason", finish),
		Int("acme.llm.usage.prompt_tokens", in), Int("acme.llm.usage.completion_tokens", out),
		Str("acme.llm.tools", unlistedToolDefinitions)}
}

// unlistedModelCopies are a model span's request and reply in OpenAI's chat vocabulary.
func (r *renderer) unlistedModelCopies(tr turn, finish string) []Attr {
	request := r.chatRequest(tr)
	msgs := make([]any, 0, len(request))
	for _, m := range request {
		msgs = append(msgs, r.openaiMessage(m))
	}
	return []Attr{Str("acme.llm.request", r.js(payload{"model": r.plan.model, "messages": msgs})),
		Str("acme.llm.response", r.js(payload{"object": "chat.completion", "model": r.plan.model,
			"choices": []any{payload{"index": 0, "finish_reason": finish, "message": r.openaiMessage(r.chatReply(tr))}}}))}
}

// unlistedAgentCopies are the root's: the user's request and the answer, as text.
func (r *renderer) unlistedAgentCopies() []Attr {
	return []Attr{Str("acme.agent.prompt", r.prompt), Str("acme.agent.answer", r.answer)}
}

// unlistedAttempt renders one try. The call id is the model's; with content capture off
// the plan has none retry_storm could read (no request carries it, no attribute source
// names the key), so the span carries one derived from the call.
func (r *renderer) unlistedAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	attrs := []Attr{Str("acme.tool.call_id", modelCallID(c))}
	if !r.traits.contentOff {
		attrs = append(attrs, Str("acme.tool.input", r.js(a.args)))
		if res := toolResult(r.traits.json, a); res != "" {
			attrs = append(attrs, Str("acme.tool.output", res))
		}
	}
	return attemptSpan{name: "acme.tool " + c.tool.name, status: r.status(a), attrs: attrs}
}
