package agenttraffic

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// shapeTraits is what one instrumentation can express; scenarios and the planner consult it
// so a trace never claims a signal its shape cannot carry.
type shapeTraits struct {
	callIDs            bool // attempts carry a stable call id
	steps              bool // Vercel AI SDK v7 style `step N` spans between agent and tools
	timeouts           bool // a failure can say "timeout"
	failsOnlyViaResult bool // the only error signal is an isError flag in the result JSON
	isErrorResults     bool // a result can carry isError with span status unset
	unsetSuccess       bool // success is status UNSET (else OK)
	nestedAttempts     bool // a logical execute_tool span holds the attempts as children
	httpChildren       bool // HTTP client spans of tool code are recorded under attempts
	results            bool // results are recorded
	args               bool // arguments (or their hash) are recorded
	session            bool // tools hang under an mcp.client.session span
	attemptNumbers     bool // each attempt record carries an explicit attempt number
	exceptions         bool // a failed attempt records an exception event
	// recallsApart: a model re-call runs under a parent span of its own (a LangGraph tools
	// node per call, an Agents SDK turn per model turn), so without a call id the fallback
	// key (parent, tool, args) still tells it from a retry of the call.
	recallsApart bool
	// detachedSpans: the instrumentation builds its spans outside the OTel context
	// (LangChain callbacks, the Agents SDK's own trace processor), so HTTP spans of tool code
	// never nest under a tool span.
	detachedSpans bool
	// oneTryPerCall: the framework runs each call once; the only retry is the model's new
	// call in its next turn.
	oneTryPerCall bool
	// resultNamesCall: the recorded result embeds the call's id (LangChain's serialized
	// ToolMessage), so one answer returned to two calls never hashes alike.
	resultNamesCall bool
	// modelCallIDs: the model's call ids are on model spans only, never on tool spans.
	modelCallIDs bool
	// ownNamesOnly: no span name or attribute key is a default recognition rule or
	// attribute source of retry_storm, the application's side_effect, idempotency_key and
	// retrystorm.read.asset included (they are attribute sources too): no side effect,
	// idempotency key, read asset or citation is planned, and a subagent is no agent level a
	// rule names.
	ownNamesOnly bool
	// mcpToolErrors: the tools mcpTools names are served over MCP: a failure of theirs is an
	// isError result with status unset, but a timeout, which the client throws.
	mcpToolErrors bool
	// contentOff: content capture is off: no message, no payload attribute, no copy of an
	// argument or result anywhere in the trace.
	contentOff bool
	scope      string
	json       jsonStyle // how the instrumentation's runtime writes payloads
}

func traitsOf(s Shape) shapeTraits {
	switch s {
	case ShapeGenAI:
		return shapeTraits{callIDs: true, steps: true, timeouts: true, isErrorResults: true,
			unsetSuccess: true, httpChildren: true, results: true, args: true, exceptions: true, scope: "ai", json: jsonCompact}
	case ShapeMastra:
		return shapeTraits{callIDs: true, steps: true, timeouts: true, isErrorResults: true,
			httpChildren: true, results: true, args: true, scope: "@mastra/core", json: jsonCompact}
	case ShapeMCP:
		return shapeTraits{callIDs: true, timeouts: true, isErrorResults: true, unsetSuccess: true,
			nestedAttempts: true, httpChildren: true, results: true, args: true, exceptions: true, scope: "mcp", json: jsonCompact}
	case ShapeOpenLLMetryMCP:
		return shapeTraits{isErrorResults: true, httpChildren: true, results: true, args: true,
			session: true, exceptions: true, scope: "opentelemetry.instrumentation.mcp", json: jsonSpaced}
	case ShapeOpenInference:
		return shapeTraits{callIDs: true, timeouts: true, isErrorResults: true, httpChildren: true,
			results: true, args: true, exceptions: true, scope: "openinference.instrumentation.openai_agents", json: jsonSpaced}
	case ShapeVercelV6:
		return shapeTraits{callIDs: true, timeouts: true, isErrorResults: true, unsetSuccess: true,
			httpChildren: true, results: true, args: true, exceptions: true, scope: "ai", json: jsonCompact}
	case ShapeClaudeCode:
		return shapeTraits{callIDs: true, unsetSuccess: true, results: true, args: true,
			scope: "com.anthropic.claude_code", json: jsonCompact}
	case ShapeLogfireMCP:
		return shapeTraits{failsOnlyViaResult: true, isErrorResults: true, unsetSuccess: true,
			httpChildren: true, results: true, args: true, scope: "logfire", json: jsonCompact}
	case ShapeAttemptRecord:
		return shapeTraits{callIDs: true, timeouts: true, args: true, attemptNumbers: true,
			scope: "agent.tool_attempts"}
	case ShapeStrands:
		// A failure is only gen_ai.tool.status=error on a span with status OK: nothing says
		// timeout. MCP tools' isError results end the same way.
		return shapeTraits{callIDs: true, isErrorResults: true, httpChildren: true, results: true,
			args: true, scope: "strands-agents", json: jsonCompact}
	case ShapeOpenInferenceLangChain:
		return shapeTraits{timeouts: true, results: true, args: true, exceptions: true, recallsApart: true,
			detachedSpans: true, resultNamesCall: true, modelCallIDs: true,
			scope: "@arizeai/openinference-instrumentation-langchain", json: jsonCompact}
	case ShapeOpenAIAgents:
		return shapeTraits{timeouts: true, results: true, args: true, exceptions: true, recallsApart: true,
			detachedSpans: true, oneTryPerCall: true, modelCallIDs: true,
			scope: "@arizeai/openinference-instrumentation-openai-agents", json: jsonCompact}
	case ShapeUnlisted:
		// The call id is the model's, on the tool span under a key of the framework's own:
		// following matches it as an attribute value. A thrown failure's status message
		// says timeout; an isError result is the span's output and the tool message's
		// content.
		return shapeTraits{callIDs: true, timeouts: true, isErrorResults: true, mcpToolErrors: true, httpChildren: true,
			results: true, args: true, exceptions: true, recallsApart: true, ownNamesOnly: true, scope: unlistedScope,
			json: jsonCompact}
	case ShapeUnlistedOffered:
		// No request records a call id, and no attribute source names the tool span's: the
		// processor groups its calls by (parent, tool), without arguments.
		return shapeTraits{timeouts: true, httpChildren: true, recallsApart: true, ownNamesOnly: true, contentOff: true,
			scope: unlistedScope, json: jsonCompact}
	}
	return shapeTraits{}
}

// keyedByToolAlone reports a shape whose calls retry_storm can only key by (parent, tool):
// no call id and no arguments are recorded, so two calls of one tool under one parent are
// one call, and a failed call chains with any later call of its tool.
func (t shapeTraits) keyedByToolAlone() bool { return !t.callIDs && !t.args }

// SendsPayloads reports whether the shape's traces carry raw argument or result values:
// not the attempt record's hashes, not a trace recorded with content capture off.
func (s Shape) SendsPayloads() bool { return s != ShapeAttemptRecord && !traitsOf(s).contentOff }

// RecordsWholeCalls reports whether the shape's traces give retry_storm every tool call with
// its arguments and result: the attempt record carries no result, and content capture off
// neither. retry_storm counts the other shapes' calls in unseen_tool_calls, and its shipped
// alert fires on them.
func (s Shape) RecordsWholeCalls() bool {
	t := traitsOf(s)
	return t.args && t.results && !t.contentOff
}

// Expresses reports whether the shape can express the scenario exactly (scenarioSupports).
func (s Shape) Expresses(sc Scenario) bool { return scenarioSupports(sc, s) }

// scenarioSupports reports whether a shape can express a scenario exactly: without a call id
// an agent re-call or a changed argument cannot be told from a new call, without a timeout
// signal no stale cache follows one, and so on.
func scenarioSupports(sc Scenario, s Shape) bool {
	t := traitsOf(s)
	if t.oneTryPerCall && retriesACall(sc) {
		return false
	}
	switch sc {
	case ScenarioTransportStorm:
		return !t.detachedSpans
	case ScenarioAgentStorm:
		// Without a call id the re-call is a call of its own only under its own parent.
		return (t.callIDs || t.recallsApart) && t.args
	case ScenarioChangedArguments:
		// The corrected arguments would give the retry a fallback key of its own.
		return t.callIDs && t.args
	case ScenarioMCPIsError:
		return t.isErrorResults
	case ScenarioStaleCache:
		return t.timeouts && t.results && !t.resultNamesCall
	case ScenarioNestedDuplicate:
		// Attempt records number their attempts: a re-recorded attempt 1 would also read as a
		// repeated attempt number, a second signal. A subagent no rule names is no agent
		// level of its own.
		return t.callIDs && !t.nestedAttempts && s != ShapeAttemptRecord && !t.ownNamesOnly
	case ScenarioDuplicateSideEffect, ScenarioUnbackedCitation:
		// Side effects, idempotency keys and read assets are the application's keys.
		return !t.ownNamesOnly
	case ScenarioIncompleteRecord:
		return s == ShapeAttemptRecord
	case ScenarioResultDrift:
		// Drift compares result hashes under one args hash: both must be recorded.
		return t.args && t.results
	case ScenarioUnresolvedAttempt:
		// The attempt record says so with an empty status. Elsewhere "no result" means none came
		// back only where results are recorded; Claude Code always sends its success flag and
		// Strands its gen_ai.tool.status, so their tool spans never lack an outcome. An
		// attempt without outcome needs its pending side effect said.
		return s == ShapeAttemptRecord || t.results && s != ShapeClaudeCode && s != ShapeStrands && !t.ownNamesOnly
	case ScenarioAttemptGap:
		return t.attemptNumbers
	}
	return true
}

// retriesACall reports a scenario that runs one call more than once (an executor's or a
// cache's retry under the same call).
func retriesACall(sc Scenario) bool {
	switch sc {
	case ScenarioExecutorStorm, ScenarioChangedArguments, ScenarioRetryAfterSuccess, ScenarioExhaustedGreen,
		ScenarioMCPIsError, ScenarioDuplicateSideEffect, ScenarioStaleCache, ScenarioIncompleteRecord,
		ScenarioResultDrift, ScenarioAttemptGap:
		return true
	}
	return false
}

// scenarioShapes lists the shapes able to express a scenario, for error messages.
func scenarioShapes(sc Scenario) []Shape {
	var out []Shape
	for _, s := range knownShapes() {
		if scenarioSupports(sc, s) {
			out = append(out, s)
		}
	}
	return out
}

// attemptSpan is how one instrumentation reports one attempt.
type attemptSpan struct {
	name   string
	kind   SpanKind
	status Status
	attrs  []Attr
	events []Event
}

// attemptSpan renders attempt a of call c in the plan's shape. Rendering draws no
// randomness, so one result renders to one attribute value: stale_cache relies on it.
func (r *renderer) attemptSpan(c *plannedCall, a *plannedAttempt) attemptSpan {
	var s attemptSpan
	switch r.plan.shape {
	case ShapeGenAI, ShapeMastra:
		s = r.genaiAttempt(c, a)
	case ShapeMCP:
		s = r.mcpAttempt(c, a)
	case ShapeOpenLLMetryMCP:
		s = r.openllmetryAttempt(c, a)
	case ShapeOpenInference:
		s = r.openinferenceAttempt(c, a)
	case ShapeVercelV6:
		s = r.vercelAttempt(c, a)
	case ShapeClaudeCode:
		s = r.claudeAttempt(c, a)
	case ShapeLogfireMCP:
		s = r.logfireAttempt(c, a)
	case ShapeAttemptRecord:
		return r.recordAttempt(c, a)
	case ShapeStrands:
		s = r.strandsAttempt(c, a)
	case ShapeOpenInferenceLangChain:
		s = r.langchainAttempt(c, a)
	case ShapeOpenAIAgents:
		s = r.openaiAgentsAttempt(c, a)
	case ShapeUnlisted, ShapeUnlistedOffered:
		s = r.unlistedAttempt(c, a)
	}
	if a.sideEffect != "" {
		s.attrs = append(s.attrs, Str("side_effect", a.sideEffect))
	}
	if a.idemKey != "" {
		s.attrs = append(s.attrs, Str("idempotency_key", a.idemKey))
	}
	if c.asset != "" {
		s.attrs = append(s.attrs, Str("retrystorm.read.asset", c.asset))
	}
	if r.copies && r.traits.exceptions && s.status.Code == StatusError {
		s.events = []Event{r.exceptionEvent(c, a)}
	}
	return s
}

// status is the span status a shape reports for an attempt.
func (r *renderer) status(a *plannedAttempt) Status {
	switch {
	case a.status == AttemptOK && r.traits.unsetSuccess:
		return Status{}
	case a.status == AttemptOK:
		return Status{Code: StatusOK}
	case a.viaResult, a.status == AttemptUnknown:
		return Status{}
	}
	return Status{Code: StatusError, Message: a.failText}
}

// toolResult is the raw tool result JSON, or an MCP-style isError result for a failure
// signalled through the result; "" when the attempt returned nothing.
func toolResult(js jsonStyle, a *plannedAttempt) string {
	switch {
	case a.status == AttemptOK:
		return js.text(a.result)
	case a.viaResult:
		return isErrorResult(js, a.failText)
	}
	return ""
}

func isErrorResult(js jsonStyle, text string) string { return js.text(isErrorPayload(text)) }

func isErrorPayload(text string) payload {
	return payload{"content": []any{payload{"type": "text", "text": text}}, "isError": true}
}

// mcpResult wraps a result the way an MCP server returns it.
func mcpResult(js jsonStyle, a *plannedAttempt) string {
	if a.status != AttemptOK {
		if a.viaResult {
			return isErrorResult(js, a.failText)
		}
		return ""
	}
	return js.text(payload{"content": []any{payload{"type": "text", "text": js.text(a.result)}}, "isError": false})
}

func (r *renderer) genaiAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	attrs := []Attr{Str("gen_ai.operation.name", "execute_tool"), Str("gen_ai.tool.name", c.tool.name),
		Str("gen_ai.tool.call.id", c.callID), Str("gen_ai.tool.type", "function")}
	if r.plan.shape == ShapeMastra {
		// Mastra records arguments as a structured value (a map attribute).
		attrs = append(attrs, Str("mastra.span.type", "tool_call"), Map("gen_ai.tool.call.arguments", attrsOf(a.args)))
	} else {
		attrs = append(attrs, Str("gen_ai.tool.call.arguments", r.traits.json.text(a.args)))
	}
	if res := toolResult(r.traits.json, a); res != "" {
		attrs = append(attrs, Str("gen_ai.tool.call.result", res))
	}
	switch {
	case a.status == AttemptOK || a.status == AttemptUnknown || a.viaResult:
	case r.plan.shape == ShapeMastra:
		attrs = append(attrs, Str("error.type", "unknown"))
	case a.status == AttemptTimeout:
		attrs = append(attrs, Str("error.type", "timeout"))
	}
	return attemptSpan{name: "execute_tool " + c.tool.name, status: r.status(a), attrs: attrs}
}

func (r *renderer) mcpAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	r.jsonrpcID++
	attrs := []Attr{Str("mcp.method.name", "tools/call"), Str("gen_ai.operation.name", "execute_tool"),
		Str("gen_ai.tool.name", c.tool.name), Str("jsonrpc.request.id", strconv.Itoa(r.jsonrpcID)),
		Str("mcp.session.id", r.sessionID), Str("network.transport", "tcp"),
		Str("server.address", "127.0.0.1"), Int("server.port", 8931),
		Str("gen_ai.tool.call.arguments", r.traits.json.text(a.args))}
	if res := mcpResult(r.traits.json, a); res != "" {
		attrs = append(attrs, Str("gen_ai.tool.call.result", res))
	}
	switch {
	case a.status == AttemptOK || a.status == AttemptUnknown:
	case a.viaResult:
		attrs = append(attrs, Str("error.type", "tool_error"))
	case a.status == AttemptTimeout:
		attrs = append(attrs, Str("error.type", "timeout"))
	default:
		attrs = append(attrs, Str("error.type", "-32603"), Str("rpc.response.status_code", "-32603"))
	}
	return attemptSpan{name: "tools/call " + c.tool.name, kind: KindClient, status: r.status(a), attrs: attrs}
}

func (r *renderer) openllmetryAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	out := payload{"result": a.result, "is_error": false}
	if a.status != AttemptOK {
		out = payload{"result": a.failText, "is_error": true}
	}
	attrs := []Attr{Str("traceloop.span.kind", "tool"), Str("traceloop.entity.name", c.tool.name),
		Str("traceloop.entity.input", r.traits.json.text(payload{"tool_name": c.tool.name, "arguments": a.args}))}
	if a.status != AttemptUnknown {
		attrs = append(attrs, Str("traceloop.entity.output", r.traits.json.text(out)))
	}
	return attemptSpan{name: c.tool.name + ".tool", kind: KindClient, status: r.status(a), attrs: attrs}
}

func (r *renderer) openinferenceAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	attrs := []Attr{Str("openinference.span.kind", "TOOL"), Str("tool.name", c.tool.name),
		Str("tool.id", c.callID), Str("input.value", r.traits.json.text(a.args)), Str("input.mime_type", "application/json")}
	if res := toolResult(r.traits.json, a); res != "" {
		attrs = append(attrs, Str("output.value", res), Str("output.mime_type", "application/json"))
	}
	return attemptSpan{name: c.tool.name, status: r.status(a), attrs: attrs}
}

func (r *renderer) vercelAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	attrs := []Attr{Str("operation.name", "ai.toolCall"), Str("ai.operationId", "ai.toolCall"),
		Str("ai.toolCall.name", c.tool.name), Str("ai.toolCall.id", c.callID),
		Str("ai.toolCall.args", r.traits.json.text(a.args))}
	if res := toolResult(r.traits.json, a); res != "" {
		attrs = append(attrs, Str("ai.toolCall.result", res))
	}
	return attemptSpan{name: "ai.toolCall", status: r.status(a), attrs: attrs}
}

// claudeAttempt follows Claude Code: success as a string flag, status left unset; the
// payloads use the hook field names (tool_input / tool_response) and are present only when
// tool details are enabled, which this simulator always does.
func (r *renderer) claudeAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	attrs := []Attr{Str("tool_name", c.tool.name), Str("tool_use_id", c.callID),
		Str("success", strconv.FormatBool(a.status == AttemptOK)), Int("duration_ms", a.dur.Milliseconds()),
		Str("tool_input", r.traits.json.text(a.args))}
	if a.status == AttemptOK {
		attrs = append(attrs, Str("tool_response", r.traits.json.text(a.result)))
	} else {
		attrs = append(attrs, Str("error", a.failText))
	}
	return attemptSpan{name: "claude_code.tool", status: Status{}, attrs: attrs}
}

func (r *renderer) logfireAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	r.jsonrpcID++
	name := "MCP request: tools/call " + c.tool.name
	req := payload{"jsonrpc": "2.0", "id": r.jsonrpcID, "method": "tools/call",
		"params": payload{"name": c.tool.name, "arguments": a.args}}
	res := isErrorResult(r.traits.json, a.failText)
	if a.status == AttemptOK {
		res = mcpResult(r.traits.json, a)
	}
	attrs := []Attr{Str("logfire.span_type", "span"), Str("logfire.msg", name), Str("request", r.traits.json.text(req))}
	if a.status != AttemptUnknown {
		attrs = append(attrs, Str("response", `{"id":`+strconv.Itoa(r.jsonrpcID)+`,"jsonrpc":"2.0","result":`+res+`}`))
	}
	return attemptSpan{name: name, kind: KindClient, status: Status{}, attrs: attrs}
}

// recordAttempt renders the per-attempt record (checkout.tool_attempts). The span status mirrors the
// record's status so an attempt with an unknown side effect never looks unresolved; an
// attempt with no outcome has an empty status and leaves the span status unset.
func (r *renderer) recordAttempt(c *plannedCall, a *plannedAttempt) attemptSpan {
	fields := []Attr{Str("event", "tool_attempt"), Str("run_id", r.plan.runID), Str("span_id", c.callID),
		Int("attempt", int64(a.number)), Str("tool_name", c.tool.name), Str("args_hash", hashHex(jsonText(a.args)))}
	if a.idemKey != "" {
		fields = append(fields, Str("idem_hash", hashHex(a.idemKey)))
	}
	status := string(a.status)
	if a.status == AttemptUnknown {
		status = ""
	}
	fields = append(fields, Str("status", status),
		Int("t_start", a.start.UnixMilli()), Int("t_end", a.end.UnixMilli()),
		Int("token_in", a.tokensIn), Int("token_out", a.tokensOut), Str("side_effect", a.sideEffect))
	if c.asset != "" {
		fields = append(fields, Str("retrystorm.read.asset", c.asset))
	}
	attrs := fields[:0:0]
	for _, f := range fields {
		if f.Key != a.drop {
			attrs = append(attrs, f)
		}
	}
	st := Status{Code: StatusOK}
	switch a.status {
	case AttemptOK:
	case AttemptUnknown:
		st = Status{}
	default:
		st = Status{Code: StatusError, Message: string(a.status)}
	}
	return attemptSpan{name: "tool_attempt", status: st, attrs: attrs}
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
