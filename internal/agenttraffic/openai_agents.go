package agenttraffic

import (
	"strconv"
	"time"
)

// The OpenAI Agents SDK over OpenInference (@openai/agents 0.20 with
// @arizeai/openinference-instrumentation-openai-agents 0.2, testdata/sdk/openai_agents*.jsonl):
// an "Agent workflow" AGENT root, an "Agent workflow" CHAIN, the agent's AGENT span, then one
// turn CHAIN per model turn holding its generation (LLM) span and that turn's TOOL spans.
// TOOL spans carry no call id (only generation spans do). A thrown error is status ERROR with
// the SDK's tool error as message, an exception event, and the errorFunction's text as
// output. The SDK runs each call once: a retry is the model's new call in the next turn.

// openaiAgentsFrame renders the workflow and agent spans the turns hang under, from start;
// it returns them, innermost first, to be closed after the last turn.
func (r *renderer) openaiAgentsFrame(start time.Time) []int {
	workflow := r.add(r.root, "Agent workflow", KindInternal, start, []Attr{
		Str("openinference.span.kind", "CHAIN"), Str("llm.system", "openai")})
	agent := r.add(r.spans[workflow].ID, r.plan.agent, KindInternal, start, []Attr{
		Str("openinference.span.kind", "AGENT"), Str("llm.system", "openai"), Str("graph.node.id", r.plan.agent)})
	r.turnParent = r.spans[agent].ID
	return []int{agent, workflow}
}

func (r *renderer) openaiAgentsAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	attrs := []Attr{Str("openinference.span.kind", "TOOL"), Str("llm.system", "openai"), Str("tool.name", c.tool.name),
		Str("input.value", r.js(a.args)), Str("input.mime_type", "application/json")}
	var status Status
	switch a.status {
	case AttemptOK:
		status = Status{Code: StatusOK}
		attrs = append(attrs, Str("output.value", r.js(a.result)), Str("output.mime_type", "application/json"))
	case AttemptError, AttemptTimeout:
		status = Status{Code: StatusError, Message: r.openaiToolError(c, a.failText)}
		attrs = append(attrs, Str("output.value", openaiErrorOutput(c, a.failText)))
	}
	return attemptSpan{name: c.tool.name, status: status, attrs: attrs}
}

// openaiToolError is the SDK's message for a tool that threw msg.
func (r *renderer) openaiToolError(c *plannedCall, msg string) string {
	return "Error running tool (non-fatal): " + r.js(payload{"tool_name": c.tool.name, "error": "Error: " + msg})
}

// openaiErrorOutput is what the tool's errorFunction hands the model for a failure.
func openaiErrorOutput(c *plannedCall, failText string) string {
	return c.tool.name + " failed: " + failText
}

// openaiAgentsModelCopies are a generation span's copies: the chat completion request and
// response, and their flattened messages.
func (r *renderer) openaiAgentsModelCopies(tr turn, finish string) []Attr {
	request, answer := r.chatRequest(tr), r.chatReply(tr)
	if h := tr.history; h != nil {
		// The model reads a failure as the errorFunction wrote it.
		for i := range request {
			for _, c := range h.calls {
				if a := c.last(); request[i].toolCallID == modelCallID(c) && a.status != AttemptOK {
					request[i].content = openaiErrorOutput(c, a.failText)
				}
			}
		}
	}
	msgs := make([]any, 0, len(request))
	for _, m := range request {
		msgs = append(msgs, r.openaiMessage(m))
	}
	attrs := []Attr{Str("input.value", r.js(msgs)), Str("input.mime_type", "application/json")}
	for i, m := range request {
		attrs = r.openinferenceMessage(attrs, "llm.input_messages."+strconv.Itoa(i)+".message.", m)
	}
	attrs = append(attrs, Str("output.value", r.js([]any{payload{"object": "chat.completion", "model": r.plan.model,
		"choices": []any{payload{"index": 0, "message": r.openaiMessage(answer), "finish_reason": finish}}}})),
		Str("output.mime_type", "application/json"))
	return r.openinferenceMessage(attrs, "llm.output_messages.0.message.", answer)
}
