package agenttraffic

import (
	"strconv"
	"time"
)

// LangChain.js createAgent over OpenInference (@arizeai/openinference-instrumentation-langchain
// 4.1, testdata/sdk/langchain_openinference*.jsonl): a CHAIN root named after the agent (no
// AGENT span), a LangGraph __start__ node, then per model turn a model_request node holding
// the LLM span, and per call a tools node holding the TOOL span. TOOL spans carry no call id
// attribute: the call id is only inside the ToolMessage a successful attempt returns. A
// thrown error is status ERROR (message and stack) with an exception event and no output;
// toolRetryMiddleware's retries are sibling TOOL spans under the call's tools node.

const langchainCoreVersion = "1.4.0"

// langchainStack is the stack trace a tool's Error carries below LangChain's tool runner.
const langchainStack = "\n    at DynamicStructuredTool.func (file:///app/node_modules/@langchain/core/dist/tools/index.js:295:11)" +
	"\n    at DynamicStructuredTool._call (file:///app/node_modules/@langchain/core/dist/tools/index.js:256:15)" +
	"\n    at DynamicStructuredTool.call (file:///app/node_modules/@langchain/core/dist/tools/index.js:136:27)" +
	"\n    at async baseHandler (file:///app/node_modules/langchain/dist/agents/nodes/ToolNode.js:236:20)"

// langchainErrorText is how OpenInference records a thrown error: its message, then the
// stack, which repeats it.
func langchainErrorText(msg string) string { return msg + "\n\nError: " + msg + langchainStack }

// uuidOf spells a stable UUID for key: LangGraph's checkpoint namespaces, without a draw.
func uuidOf(key string) string {
	h := hashHex(key)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// langgraphMetadata is the metadata OpenInference copies from LangGraph's run config onto
// every span of a node: node runs in step, pushed as the index-th Send (-1: pulled).
func (r *renderer) langgraphMetadata(integration, node string, step, index int, ns string, versions bool) string {
	path := []any{"__pregel_pull", node}
	triggers := []any{"branch:to:" + node}
	if index >= 0 {
		path, triggers = []any{"__pregel_push", index, false}, []any{"__pregel_push"}
	}
	if node == "__start__" {
		triggers = []any{"__start__"}
	}
	md := payload{"ls_integration": integration, "lc_agent_name": r.plan.agent, "langgraph_step": step,
		"langgraph_node": node, "langgraph_triggers": triggers, "langgraph_path": path,
		"langgraph_checkpoint_ns": node + ":" + uuidOf(ns), "checkpoint_ns": node + ":" + uuidOf(ns)}
	if versions {
		md["versions"] = payload{"@langchain/core": langchainCoreVersion}
	}
	return r.js(md)
}

// toolsNodeAttrs are the attributes of call c's tools node.
func (r *renderer) toolsNodeAttrs(c *plannedCall) []Attr {
	return []Attr{Str("openinference.span.kind", "CHAIN"), Str("metadata", r.toolsMetadata(c, false))}
}

// toolsMetadata is the metadata of call c's tools node; its TOOL spans add the versions.
func (r *renderer) toolsMetadata(c *plannedCall, versions bool) string {
	return r.langgraphMetadata("langchain_create_agent", "tools", 2*r.turnNo, r.callNo, r.plan.runID+"\x00"+modelCallID(c), versions)
}

func (r *renderer) langchainAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	attrs := []Attr{Str("openinference.span.kind", "TOOL"), Str("input.value", r.js(a.args)),
		Str("input.mime_type", "application/json")}
	var status Status
	switch a.status {
	case AttemptOK:
		status = Status{Code: StatusOK}
		attrs = append(attrs, Str("output.value", r.js(payload{"output": r.lcToolMessage(c, "success", r.js(a.result))})),
			Str("output.mime_type", "application/json"))
	case AttemptError, AttemptTimeout:
		status = Status{Code: StatusError, Message: langchainErrorText(a.failText)}
	}
	attrs = append(attrs, Str("metadata", r.toolsMetadata(c, true)), Str("tool.name", c.tool.name))
	return attemptSpan{name: c.tool.name, status: status, attrs: attrs}
}

// langchainStart renders LangGraph's __start__ node, which hands the request to the graph.
func (r *renderer) langchainStart(start, end time.Time) {
	idx := r.add(r.root, "__start__", KindInternal, start, []Attr{Str("openinference.span.kind", "CHAIN"),
		Str("metadata", r.langgraphMetadata("langchain_create_agent", "__start__", 0, -1, r.plan.runID, false))})
	r.spans[idx].End, r.spans[idx].Status = end, Status{Code: StatusOK}
	if r.copies {
		in := r.js(payload{"messages": []any{r.lcHuman()}})
		r.spans[idx].Attrs = append(r.spans[idx].Attrs, Str("input.value", in), Str("input.mime_type", "application/json"),
			Str("output.value", in), Str("output.mime_type", "application/json"))
	}
}

// langchainModelRequest renders one model turn: the model_request node, its LLM span (from
// t to end, in and out tokens) and the routing lambda that sends the calls to tools nodes.
// It returns the node's end.
func (r *renderer) langchainModelRequest(parent SpanID, t, end time.Time, in, out int64, finish string, tr turn) time.Time {
	step, ns := 2*r.turnNo-1, r.plan.runID+"\x00model_request\x00"+strconv.Itoa(r.turnNo)
	md := r.langgraphMetadata("langchain_create_agent", "model_request", step, -1, ns, false)
	node := r.add(parent, "model_request", KindInternal, t, []Attr{Str("openinference.span.kind", "CHAIN"), Str("metadata", md)})
	nodeID := r.spans[node].ID
	llm := r.add(nodeID, "ChatOpenAI", KindInternal, t.Add(1*millis), append([]Attr{Str("openinference.span.kind", "LLM"),
		Str("llm.model_name", r.plan.model), Str("llm.provider", "openai"), Str("llm.system", "openai"),
		Str("llm.invocation_parameters", r.js(payload{"model": r.plan.model})),
		Str("metadata", r.langgraphMetadata("langchain_chat_model", "model_request", step, -1, ns, false)),
		Int("llm.token_count.prompt", in), Int("llm.token_count.completion", out), Int("llm.token_count.total", in+out)},
		r.langchainLLMCopies(tr, finish)...))
	r.spans[llm].End, r.spans[llm].Status = end, Status{Code: StatusOK}
	route := r.add(nodeID, "RunnableLambda", KindInternal, end, []Attr{Str("openinference.span.kind", "CHAIN"), Str("metadata", md)})
	r.spans[route].End, r.spans[route].Status = end.Add(1*millis), Status{Code: StatusOK}
	r.spans[node].End, r.spans[node].Status = end.Add(2*millis), Status{Code: StatusOK}
	if r.copies {
		r.spans[route].Attrs = append(r.spans[route].Attrs, r.langchainRouteCopies(tr)...)
		r.spans[node].Attrs = append(r.spans[node].Attrs,
			Str("input.value", r.js(payload{"messages": r.lcRequest(tr)})), Str("input.mime_type", "application/json"),
			Str("output.value", r.js(payload{"output": []any{payload{"lg_name": "Command",
				"update": payload{"messages": []any{r.lcAI(tr.calls, r.replyContent(tr))}}, "goto": []any{}}}})),
			Str("output.mime_type", "application/json"))
	}
	return r.spans[node].End
}

// closeToolsNode ends call c's tools node at end with the ToolMessage it returned.
func (r *renderer) closeToolsNode(idx int, c *plannedCall, end time.Time) {
	sp := &r.spans[idx]
	sp.End = end
	content, status, ok := r.langchainReply(c)
	if !ok {
		// The call's only attempt never came back: neither did the node.
		return
	}
	sp.Status = Status{Code: StatusOK}
	if !r.copies {
		return
	}
	sp.Attrs = append(sp.Attrs,
		Str("input.value", r.js(payload{"messages": []any{r.lcHuman(), r.lcAI([]*plannedCall{c}, "")}, "lg_tool_call": lcToolCall(c)})),
		Str("input.mime_type", "application/json"),
		Str("output.value", r.js(payload{"messages": []any{r.lcToolMessage(c, status, content)}})),
		Str("output.mime_type", "application/json"))
}

// langchainReply is the ToolMessage content call c gave the model: its result as JSON
// text, or the ToolNode's error message; ok is false when nothing came back.
func (r *renderer) langchainReply(c *plannedCall) (content, status string, ok bool) {
	a := c.last()
	switch {
	case a.status == AttemptOK && a.result != nil:
		return r.js(a.result), "success", true
	case a.status == AttemptError || a.status == AttemptTimeout:
		return "Error: " + a.failText + "\n Please fix your mistakes.", "error", true
	}
	return "", "", false
}

// replyContent is the text of the model's answer to tr: the final answer, or none beside
// tool calls.
func (r *renderer) replyContent(tr turn) string {
	if len(tr.calls) > 0 {
		return ""
	}
	return r.answer
}

// ---- LangChain's serialized messages ----

func lcMessage(kind string, kwargs payload) payload {
	return payload{"lc": 1, "type": "constructor", "id": []any{"langchain_core", "messages", kind}, "kwargs": kwargs}
}

func (r *renderer) lcHuman() payload {
	return lcMessage("HumanMessage", payload{"content": r.prompt, "additional_kwargs": payload{}, "response_metadata": payload{}})
}

func lcToolCall(c *plannedCall) payload {
	return payload{"id": modelCallID(c), "name": c.tool.name, "args": askedArgs(c), "type": "tool_call"}
}

func (r *renderer) lcAI(calls []*plannedCall, text string) payload {
	tc := []any{}
	for _, c := range calls {
		tc = append(tc, lcToolCall(c))
	}
	return lcMessage("AIMessage", payload{"content": text, "tool_calls": tc, "invalid_tool_calls": []any{},
		"additional_kwargs": payload{}, "response_metadata": payload{}, "name": r.plan.agent})
}

func (r *renderer) lcToolMessage(c *plannedCall, status, content string) payload {
	return lcMessage("ToolMessage", payload{"status": status, "content": content, "tool_call_id": modelCallID(c),
		"name": c.tool.name, "metadata": payload{"versions": payload{"@langchain/core": langchainCoreVersion}},
		"additional_kwargs": payload{}, "response_metadata": payload{}})
}

// lcRequest is the conversation turn tr sends: the request and the step it replays.
func (r *renderer) lcRequest(tr turn) []any {
	msgs := []any{r.lcHuman()}
	if tr.history == nil {
		return msgs
	}
	msgs = append(msgs, r.lcAI(tr.history.calls, ""))
	for _, c := range tr.history.calls {
		if content, status, ok := r.langchainReply(c); ok {
			msgs = append(msgs, r.lcToolMessage(c, status, content))
		}
	}
	return msgs
}

func (r *renderer) langchainLLMCopies(tr turn, finish string) []Attr {
	if !r.copies {
		return nil
	}
	reply := r.lcAI(tr.calls, r.replyContent(tr))
	attrs := []Attr{Str("input.value", r.js(payload{"messages": []any{r.lcRequest(tr)}})),
		Str("input.mime_type", "application/json"),
		Str("output.value", r.js(payload{"generations": []any{[]any{payload{"text": r.replyContent(tr), "message": reply,
			"generationInfo": payload{"finish_reason": finish}}}}})),
		Str("output.mime_type", "application/json")}
	for i, m := range r.chatRequest(tr) {
		attrs = r.openinferenceMessage(attrs, "llm.input_messages."+strconv.Itoa(i)+".message.", m)
	}
	return r.openinferenceMessage(attrs, "llm.output_messages.0.message.", r.chatReply(tr))
}

// langchainRouteCopies are the routing lambda's output: a Send per call, or the graph's end.
func (r *renderer) langchainRouteCopies(tr turn) []Attr {
	if len(tr.calls) == 0 {
		return []Attr{Str("output.value", "__end__"), Str("output.mime_type", "text/plain")}
	}
	sends := []any{}
	for _, c := range tr.calls {
		sends = append(sends, payload{"lg_name": "Send", "node": "tools", "args": payload{"lg_tool_call": lcToolCall(c)}})
	}
	return []Attr{Str("output.value", r.js(payload{"output": sends})), Str("output.mime_type", "application/json")}
}

// langchainAgentCopies are the root's: the request, and the conversation's last step and
// answer.
func (r *renderer) langchainAgentCopies() []Attr {
	final := r.lcRequest(turn{history: r.plan.lastToolStep()})
	final = append(final, r.lcAI(nil, r.answer))
	return []Attr{Str("input.value", r.js(payload{"messages": []any{r.lcHuman()}})), Str("input.mime_type", "application/json"),
		Str("output.value", r.js(payload{"messages": final})), Str("output.mime_type", "application/json")}
}
