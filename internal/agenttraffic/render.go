package agenttraffic

import (
	"strconv"
	"time"
)

// renderer lays a plan out on the clock and turns it into spans in parent-before-child order.
type renderer struct {
	g         *rng
	traits    shapeTraits
	plan      *plan
	spans     []Span
	jsonrpcID int
	sessionID string
	// copies says whether model, agent and HTTP spans carry copies of the payloads.
	copies bool
	prompt string
	answer string
	// prev is the step the next model turn replays as history.
	prev *plannedStep
	root SpanID
	// turnParent is where model turns hang: the root, or the OpenAI Agents SDK's agent span.
	turnParent SpanID
	// toolParent is where tool calls hang: the root, or the MCP client session.
	toolParent SpanID
	// turnNo and callNo place the model turn and the call being rendered (LangGraph's step
	// and push index); usage sums a Strands agent's model tokens.
	turnNo, callNo int
	usage          tokenUsage
}

const millis = time.Millisecond

func render(g *rng, p *plan, start time.Time, copies bool) []Span {
	traits := traitsOf(p.shape)
	r := &renderer{g: g, traits: traits, plan: p, jsonrpcID: g.between(1, 40),
		sessionID: g.hex(32), copies: copies && !traits.contentOff, prompt: prompts[p.agent], answer: answerText(p)}
	rootIdx := r.add(SpanID{}, r.rootName(), KindInternal, start, r.rootAttrs(start))
	r.root = r.spans[rootIdx].ID
	r.turnParent, r.toolParent = r.root, r.root
	t := start.Add(2 * millis)
	frame := r.agentFrame(start.Add(1*millis), t)
	sessionIdx := -1
	if r.traits.session {
		sessionIdx = r.add(r.root, "mcp.client.session", KindClient, t, []Attr{
			Str("traceloop.span.kind", "session"), Str("mcp.session.id", r.sessionID)})
		r.toolParent = r.spans[sessionIdx].ID
	}
	for i, s := range p.steps {
		t = r.step(i+1, s, t)
	}
	if sessionIdx >= 0 {
		r.spans[sessionIdx].End = t
		r.spans[sessionIdx].Status = Status{Code: StatusOK}
	}
	t = r.finalTurn(len(p.steps)+1, t)
	for _, idx := range frame {
		r.spans[idx].End, r.spans[idx].Status = t.Add(1*millis), Status{Code: StatusOK}
	}
	root := &r.spans[rootIdx]
	root.End = t.Add(3 * millis)
	root.Status = Status{Code: p.rootStatus}
	root.Attrs = append(root.Attrs, r.rootEndAttrs(root.End)...)
	attrs, events := r.agentCopies(root.Start, root.End)
	root.Attrs, root.Events = append(root.Attrs, attrs...), events
	return r.spans
}

// add appends a span that starts at start; the caller sets End (and Status) once known.
func (r *renderer) add(parent SpanID, name string, kind SpanKind, start time.Time, attrs []Attr) int {
	var id SpanID
	r.g.fill(id[:])
	r.spans = append(r.spans, Span{ID: id, Parent: parent, Name: name, Kind: kind, Start: start,
		End: start, Attrs: attrs})
	return len(r.spans) - 1
}

// rootName is the name of the root agent span.
func (r *renderer) rootName() string {
	switch r.plan.shape {
	case ShapeOpenInferenceLangChain:
		return r.plan.agent
	case ShapeOpenAIAgents:
		return "Agent workflow"
	case ShapeUnlisted, ShapeUnlistedOffered:
		return "acme.agent.run"
	}
	return "invoke_agent " + r.plan.agent
}

func (r *renderer) rootAttrs(start time.Time) []Attr {
	var attrs []Attr
	switch r.plan.shape {
	case ShapeStrands:
		attrs = r.strandsAgentAttrs(r.plan.agent, start)
	case ShapeOpenInferenceLangChain:
		attrs = []Attr{Str("openinference.span.kind", "CHAIN"), Str("metadata", r.js(payload{
			"ls_integration": "langchain_create_agent", "lc_agent_name": r.plan.agent}))}
	case ShapeOpenAIAgents:
		attrs = []Attr{Str("openinference.span.kind", "AGENT"), Str("llm.system", "openai")}
	case ShapeUnlisted, ShapeUnlistedOffered:
		attrs = r.unlistedAgentAttrs()
	default:
		attrs = r.invokeAgentAttrs()
	}
	if len(r.plan.citedAssets) > 0 {
		attrs = append(attrs, Strs("retrystorm.answer.cited_assets", r.plan.citedAssets...))
	}
	return attrs
}

// rootEndAttrs are the root's attributes known once it ends: Strands' end time and usage.
func (r *renderer) rootEndAttrs(end time.Time) []Attr {
	if r.plan.shape != ShapeStrands {
		return nil
	}
	return r.usage.strandsAttrs(Str("gen_ai.event.end_time", eventTime(end)))
}

// agentFrame renders the spans between the root and the model turns, from start; it
// returns those that stay open until the last turn ends.
func (r *renderer) agentFrame(start, t time.Time) []int {
	switch r.plan.shape {
	case ShapeOpenAIAgents:
		return r.openaiAgentsFrame(start)
	case ShapeOpenInferenceLangChain:
		r.langchainStart(start, t)
	}
	return nil
}

func (r *renderer) invokeAgentAttrs() []Attr {
	attrs := []Attr{Str("gen_ai.operation.name", "invoke_agent"), Str("gen_ai.agent.name", r.plan.agent),
		Str("gen_ai.request.model", r.plan.model), Str("gen_ai.conversation.id", "conv_"+r.g.token(16))}
	switch r.plan.shape {
	case ShapeOpenInference:
		attrs = append(attrs, Str("openinference.span.kind", "AGENT"))
	case ShapeMastra:
		attrs = append(attrs, Str("mastra.span.type", "agent_run"))
	case ShapeVercelV6:
		attrs = append(attrs, Str("operation.name", "ai.generateText"))
	case ShapeAttemptRecord:
		attrs = append(attrs, Str("run_id", r.plan.runID))
	}
	return attrs
}

// step renders one model turn and the calls it asked for; it returns when the next turn starts.
func (r *renderer) step(n int, s *plannedStep, t time.Time) time.Time {
	tr := turn{history: r.prev, calls: s.calls}
	r.turnNo = n
	parent, stepIdx := r.turnParent, r.turnSpan(n, t)
	if stepIdx >= 0 {
		parent = r.spans[stepIdx].ID
	}
	end := r.model(parent, t, "tool_calls", tr)
	r.prev = s
	callParent := parent
	if r.traits.session {
		callParent = r.toolParent
	}
	callsStart := end.Add(2 * millis)
	for j, c := range s.calls {
		// Parallel calls start a few ms apart so their order is the planned order.
		r.callNo = j
		end = later(end, r.call(callParent, c, callsStart.Add(time.Duration(3*j)*millis)))
	}
	if stepIdx >= 0 {
		r.closeTurn(stepIdx, end.Add(1*millis), tr, s, "")
	}
	return end.Add(5 * millis)
}

// finalTurn renders the model turn that writes the answer.
func (r *renderer) finalTurn(n int, t time.Time) time.Time {
	final := turn{history: r.prev}
	r.turnNo = n
	idx := r.turnSpan(n, t)
	if idx < 0 {
		return r.model(r.turnParent, t, "stop", final)
	}
	end := r.model(r.spans[idx].ID, t.Add(1*millis), "stop", final)
	r.closeTurn(idx, end.Add(1*millis), final, &plannedStep{}, r.answer)
	return end.Add(2 * millis)
}

// turnSpan opens the span that holds model turn n and its calls where the shape has one
// (Vercel's step, Strands' event loop cycle, the Agents SDK's turn, Acme's step); -1 where
// it has none.
func (r *renderer) turnSpan(n int, t time.Time) int {
	switch {
	case r.traits.steps:
		return r.add(r.turnParent, "step "+strconv.Itoa(n), KindInternal, t, []Attr{
			Str("gen_ai.operation.name", "agent_step"), Int("gen_ai.agent.step", int64(n))})
	case r.plan.shape == ShapeStrands:
		return r.add(r.turnParent, "execute_agent_loop_cycle", KindInternal, t, []Attr{
			Str("agent_loop.cycle_id", "cycle-"+strconv.Itoa(n)), Str("gen_ai.event.start_time", eventTime(t))})
	case r.plan.shape == ShapeOpenAIAgents:
		return r.add(r.turnParent, "turn", KindInternal, t, []Attr{
			Str("openinference.span.kind", "CHAIN"), Str("llm.system", "openai")})
	case r.plan.shape == ShapeUnlisted || r.plan.shape == ShapeUnlistedOffered:
		return r.add(r.turnParent, "acme.agent.step", KindInternal, t, []Attr{Int("acme.agent.step.index", int64(n))})
	}
	return -1
}

// closeTurn ends the turn span idx at end: turn tr asked for the calls of s, or wrote text.
func (r *renderer) closeTurn(idx int, end time.Time, tr turn, s *plannedStep, text string) {
	sp := &r.spans[idx]
	sp.End = end
	switch r.plan.shape {
	case ShapeStrands:
		sp.Status = Status{Code: StatusOK}
		sp.Attrs = append(sp.Attrs, Str("gen_ai.event.end_time", eventTime(end)))
		sp.Events = r.strandsCycleEvents(tr, sp.Start)
	case ShapeOpenAIAgents, ShapeUnlisted, ShapeUnlistedOffered:
		sp.Status = Status{Code: StatusOK}
	default:
		sp.Attrs = append(sp.Attrs, r.stepCopies(s, text)...)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// call renders the attempts of one call one after another; it returns the call's end.
func (r *renderer) call(parent SpanID, c *plannedCall, start time.Time) time.Time {
	attemptParent, logicalIdx, nodeIdx := parent, -1, -1
	t := start
	switch {
	case r.traits.nestedAttempts:
		logicalIdx = r.add(parent, "execute_tool "+c.tool.name, KindInternal, start, []Attr{
			Str("gen_ai.operation.name", "execute_tool"), Str("gen_ai.tool.name", c.tool.name),
			Str("gen_ai.tool.call.id", c.callID)})
		attemptParent = r.spans[logicalIdx].ID
		t = t.Add(1 * millis)
	case r.plan.shape == ShapeOpenInferenceLangChain:
		// LangGraph runs each call in a tools node of its own (a Send per call).
		nodeIdx = r.add(parent, "tools", KindInternal, start, r.toolsNodeAttrs(c))
		attemptParent = r.spans[nodeIdx].ID
		t = t.Add(1 * millis)
	}
	for i, a := range c.attempts {
		if i > 0 {
			t = t.Add(r.backoff(c.attempts[i-1]))
		}
		a.parent, a.start, a.end = attemptParent, t, t.Add(a.dur)
		if a.number == 0 {
			a.number = i + 1
		}
		s := r.attemptSpan(c, a)
		idx := r.add(attemptParent, s.name, s.kind, a.start, s.attrs)
		r.spans[idx].End, r.spans[idx].Status, r.spans[idx].Events = a.end, s.status, s.events
		a.spanID = r.spans[idx].ID
		r.sends(c, a)
		if c.nested && i == len(c.attempts)-1 {
			r.subagent(c, a, s)
		}
		t = a.end
	}
	if logicalIdx >= 0 {
		r.spans[logicalIdx].End = t.Add(1 * millis)
		if last := c.last(); last.status == AttemptError || last.status == AttemptTimeout {
			r.spans[logicalIdx].Status = Status{Code: StatusError, Message: last.failText}
		}
		t = t.Add(1 * millis)
	}
	if nodeIdx >= 0 {
		t = t.Add(1 * millis)
		r.closeToolsNode(nodeIdx, c, t)
	}
	return t
}

// backoff is the pause before the next try: a retry policy's delay after a failure, a short
// gap when the executor re-runs a call that had succeeded.
func (r *renderer) backoff(prev *plannedAttempt) time.Duration {
	if prev.status == AttemptOK {
		return r.g.ms(20, 200)
	}
	return r.g.ms(100, 600)
}

// sends renders the attempt's HTTP requests, evenly over its duration.
func (r *renderer) sends(c *plannedCall, a *plannedAttempt) {
	if len(a.sends) == 0 {
		return
	}
	method, url, host, port := "POST", "https://api.example.com/v1/"+c.tool.name, "api.example.com", int64(443)
	switch {
	case r.plan.shape == ShapeMCP:
		url, host, port = "http://127.0.0.1:8931/mcp", "127.0.0.1", 8931
	case c.tool.name == "get_order" || c.tool.name == "lookup_customer" || c.tool.name == "fetch_url":
		method = "GET"
	}
	// The request names what it is about: the URL carries an argument, a side-effect
	// request its idempotency key. Not so for MCP's JSON-RPC requests, and not where the
	// tool spans carry hashes only (the attempt record): copies repeat what tool spans carry.
	var idem []Attr
	if r.copies && r.plan.shape != ShapeMCP && r.plan.shape != ShapeAttemptRecord {
		if c.tool.url != nil {
			url, host = c.tool.url(a.args)
		}
		if a.idemKey != "" {
			idem = []Attr{Strs("http.request.header.idempotency-key", a.idemKey)}
		}
	}
	slot := (a.dur - 2*millis) / time.Duration(len(a.sends))
	for i, s := range a.sends {
		start := a.start.Add(1*millis + time.Duration(i)*slot)
		attrs := []Attr{Str("http.request.method", method), Str("url.full", url),
			Str("server.address", host), Int("server.port", port)}
		if s.code > 0 {
			attrs = append(attrs, Int("http.response.status_code", int64(s.code)))
		}
		// The undici and node:http instrumentations under Strands never set resend_count.
		if i > 0 && r.plan.shape != ShapeStrands {
			attrs = append(attrs, Int("http.request.resend_count", int64(i)))
		}
		if s.errType != "" {
			attrs = append(attrs, Str("error.type", s.errType))
		}
		attrs = append(attrs, idem...)
		idx := r.add(a.spanID, method, KindClient, start, attrs)
		r.spans[idx].End = start.Add(slot * 4 / 5)
		if s.status() != AttemptOK {
			r.spans[idx].Status = Status{Code: StatusError}
		}
	}
}

// subagent renders a subagent that records the same call again under its own agent span
// (a hook that fires at both agent levels).
func (r *renderer) subagent(c *plannedCall, a *plannedAttempt, s attemptSpan) {
	start := a.start.Add(3 * millis)
	name := r.plan.agent + "-subagent"
	attrs := []Attr{Str("gen_ai.operation.name", "invoke_agent"), Str("gen_ai.agent.name", name)}
	if r.plan.shape == ShapeStrands {
		attrs = r.strandsAgentAttrs(name, start)
	}
	idx := r.add(a.spanID, "invoke_agent "+name, KindInternal, start, attrs)
	sub, cycleIdx := r.spans[idx].ID, -1
	outer := r.usage
	r.usage = tokenUsage{}
	if r.plan.shape == ShapeStrands {
		// A Strands agent runs its turns in event loop cycles of its own.
		cycleIdx = r.add(sub, "execute_agent_loop_cycle", KindInternal, start, []Attr{
			Str("agent_loop.cycle_id", "cycle-1"), Str("gen_ai.event.start_time", eventTime(start))})
		sub = r.spans[cycleIdx].ID
	}
	tr := turn{calls: []*plannedCall{c}}
	modelEnd := r.model(sub, start.Add(1*millis), "tool_calls", tr)
	copyIdx := r.add(sub, s.name, s.kind, modelEnd.Add(2*millis), s.attrs)
	r.spans[copyIdx].Events = s.events
	r.spans[copyIdx].End = a.end.Add(-5 * millis)
	a.countedID = r.spans[copyIdx].ID
	r.spans[copyIdx].Status = s.status
	if cycleIdx >= 0 {
		r.closeTurn(cycleIdx, a.end.Add(-4*millis), tr, &plannedStep{calls: tr.calls}, "")
	}
	end := a.end.Add(-3 * millis)
	r.spans[idx].End = end
	if r.plan.shape == ShapeStrands {
		r.spans[idx].Status = Status{Code: StatusOK}
		r.spans[idx].Attrs = append(r.spans[idx].Attrs, r.usage.strandsAttrs(Str("gen_ai.event.end_time", eventTime(end)))...)
	}
	r.usage = outer
}

// model renders one model call of turn tr in the shape's style; it returns its end.
func (r *renderer) model(parent SpanID, t time.Time, finish string, tr turn) time.Time {
	in, out := int64(r.g.between(800, 6000)), int64(r.g.between(20, 600))
	end := t.Add(r.g.ms(300, 1800))
	kind := KindClient
	var name string
	var attrs []Attr
	switch r.plan.shape {
	case ShapeStrands:
		r.usage = r.usage.add(in, out)
		name, kind = "chat", KindInternal
		attrs = tokenUsage{in, out}.strandsAttrs(Str("gen_ai.operation.name", "chat"), Str("gen_ai.system", "strands-agents"),
			Str("gen_ai.request.model", r.plan.model), Str("gen_ai.event.start_time", eventTime(t)),
			Str("gen_ai.event.end_time", eventTime(end)))
		attrs = append(attrs, Int("gen_ai.server.request.duration", end.Sub(t).Milliseconds()))
	case ShapeOpenInferenceLangChain:
		return r.langchainModelRequest(parent, t, end, in, out, finish, tr)
	case ShapeOpenAIAgents:
		name, kind = "generation", KindInternal
		attrs = []Attr{Str("openinference.span.kind", "LLM"), Str("llm.system", "openai"),
			Str("llm.model_name", r.plan.model), Str("llm.finish_reason", finish), Int("llm.token_count.prompt", in),
			Int("llm.token_count.completion", out), Int("llm.token_count.total", in+out)}
	case ShapeOpenInference:
		name = "ChatCompletion"
		attrs = []Attr{Str("openinference.span.kind", "LLM"), Str("llm.model_name", r.plan.model),
			Int("llm.token_count.prompt", in), Int("llm.token_count.completion", out)}
	case ShapeVercelV6:
		name = "ai.generateText.doGenerate"
		attrs = []Attr{Str("operation.name", "ai.generateText.doGenerate"), Str("ai.model.id", r.plan.model),
			Int("ai.usage.promptTokens", in), Int("ai.usage.completionTokens", out),
			Str("gen_ai.request.model", r.plan.model), Int("gen_ai.usage.input_tokens", in),
			Int("gen_ai.usage.output_tokens", out), Strs("gen_ai.response.finish_reasons", finish)}
	case ShapeUnlisted, ShapeUnlistedOffered:
		name, attrs = "acme.llm.generate", r.unlistedModelAttrs(in, out, finish)
	case ShapeClaudeCode:
		name = "claude_code.llm_request"
		attrs = []Attr{Str("model", r.plan.model), Int("input_tokens", in), Int("output_tokens", out)}
	case ShapeOpenLLMetryMCP:
		name = "openai.chat"
		attrs = []Attr{Str("llm.request.type", "chat"), Str("gen_ai.system", "openai"),
			Str("gen_ai.request.model", r.plan.model), Int("gen_ai.usage.input_tokens", in),
			Int("gen_ai.usage.output_tokens", out)}
	default:
		name = "chat " + r.plan.model
		attrs = []Attr{Str("gen_ai.operation.name", "chat"), Str("gen_ai.provider.name", "openai"),
			Str("gen_ai.request.model", r.plan.model), Str("gen_ai.response.model", r.plan.model),
			Int("gen_ai.usage.input_tokens", in), Int("gen_ai.usage.output_tokens", out),
			Strs("gen_ai.response.finish_reasons", finish), Float("gen_ai.request.temperature", 0.2)}
	}
	copies, events := r.modelCopies(tr, finish, t, end)
	idx := r.add(parent, name, kind, t, append(attrs, copies...))
	r.spans[idx].End, r.spans[idx].Events = end, events
	switch r.plan.shape {
	case ShapeStrands, ShapeOpenAIAgents, ShapeUnlisted, ShapeUnlistedOffered:
		r.spans[idx].Status = Status{Code: StatusOK}
	}
	return end
}
