package agenttraffic

import "strings"

// A model span of a real agent carries what the model was sent and what it answered; the
// tool calls' arguments and results travel there again, in the instrumentation's message
// format. A conversation copies the values the tool spans carry (the same args object, the
// same result) and draws no randomness, so copies change no id, time or truth.

// turn is one model call: the step before it (whose calls and results the request
// replays) and the calls it asks for; a turn with no calls writes the answer. Requests
// replay one step of history, not all of it, so a trace's copies grow with its calls
// rather than with their square.
type turn struct {
	history *plannedStep
	calls   []*plannedCall
}

// prompts are the users' requests, one per agent.
var prompts = map[string]string{
	"checkout-agent": "Check the customer's open order, charge the card and e-mail the receipt.",
	"support-agent":  "Look up the customer, find the relevant docs and open a ticket if needed.",
	"data-analyst":   "Summarise yesterday's revenue by region and check that the tables are fresh.",
	"treasury-agent": "Move the settled balance to the operating account and confirm the transfer.",
}

// answerText is the agent's final answer. Answers quote what the tools found, so it quotes
// the last successful call's first space-free result value.
func answerText(p *plan) string {
	quote := ""
	for _, c := range p.calls() {
		last := c.last()
		if last.status != AttemptOK {
			continue
		}
		for _, v := range payloadLeaves(last.result, nil) {
			if !strings.Contains(v, " ") && v != c.asset {
				quote = v
				break
			}
		}
	}
	if quote == "" {
		return "Done."
	}
	return "Done. The last tool answered " + quote + "."
}

// modelCallID is the id the model gave a tool call: the call id where the shape records
// one, the model's id where only model spans record it, else one derived from the call (the
// model's id is not on the tool span there).
func modelCallID(c *plannedCall) string {
	switch {
	case c.callID != "":
		return c.callID
	case c.modelID != "":
		return c.modelID
	}
	return "call_" + hashHex(c.tool.name + "\x00" + jsonText(c.attempts[0].args))[:24]
}

// askedArgs are the arguments the model asked for: the call's first attempt's.
func askedArgs(c *plannedCall) payload { return c.attempts[0].args }

// reply is what a call gave back to the model: its last attempt's result, the isError
// result a failure travelled in, or the failure text; ok is false when nothing came back.
func reply(c *plannedCall) (v any, failed, ok bool) {
	a := c.last()
	switch {
	case a.status == AttemptOK && a.result != nil:
		return a.result, false, true
	case a.viaResult:
		return isErrorPayload(a.failText), true, true
	case a.status == AttemptError || a.status == AttemptTimeout:
		return a.failText, true, true
	}
	return nil, false, false
}

// chatMessage is one message of an OpenAI-style chat request or reply.
type chatMessage struct {
	role       string
	content    string
	toolCallID string
	calls      []*plannedCall
}

// chatRequest is the request of turn tr as chat messages.
func (r *renderer) chatRequest(tr turn) []chatMessage {
	msgs := []chatMessage{{role: "user", content: r.prompt}}
	if tr.history == nil {
		return msgs
	}
	msgs = append(msgs, chatMessage{role: "assistant", calls: tr.history.calls})
	for _, c := range tr.history.calls {
		if v, _, ok := reply(c); ok {
			msgs = append(msgs, chatMessage{role: "tool", content: r.replyText(v), toolCallID: modelCallID(c)})
		}
	}
	return msgs
}

// chatReply is the model's answer to turn tr.
func (r *renderer) chatReply(tr turn) chatMessage {
	if len(tr.calls) > 0 {
		return chatMessage{role: "assistant", calls: tr.calls}
	}
	return chatMessage{role: "assistant", content: r.answer}
}

// replyText is a reply as a chat message's content: results as the tool's JSON text.
func (r *renderer) replyText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return r.traits.json.text(v)
}

// lastToolStep is the plan's last step that called tools, or nil.
func (p *plan) lastToolStep() *plannedStep {
	if len(p.steps) == 0 {
		return nil
	}
	return p.steps[len(p.steps)-1]
}
