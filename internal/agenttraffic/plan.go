package agenttraffic

import (
	"time"
)

// AttemptStatus is the normalised outcome of a tool attempt (ANALYSIS.md, "Status").
type AttemptStatus string

// Attempt statuses.
const (
	AttemptOK      AttemptStatus = "ok"
	AttemptError   AttemptStatus = "error"
	AttemptTimeout AttemptStatus = "timeout"
	AttemptUnknown AttemptStatus = "unknown"
)

// Side effects, as the per-attempt record spells them.
const (
	sideEffectNone     = "none"
	sideEffectUnknown  = "unknown"
	sideEffectExternal = "external"
)

// send is one HTTP request on the wire under a tool attempt. code 0 means no response
// (connection reset or timeout), reported as errType.
type send struct {
	code    int
	errType string
}

func (s send) status() AttemptStatus {
	if s.code == 0 || s.code >= 500 {
		return AttemptError
	}
	return AttemptOK
}

// plannedAttempt is one try of a tool call before an instrumentation renders it.
type plannedAttempt struct {
	status AttemptStatus
	// viaResult marks a failure signalled only by an isError result, span status unset.
	viaResult  bool
	args       payload
	result     payload
	failText   string
	sends      []send
	dur        time.Duration
	idemKey    string
	sideEffect string
	tokensIn   int64
	tokensOut  int64
	// drop names a attempt record field this attempt leaves out (incomplete_record).
	drop string
	// stale marks an answer served from a cache instead of a live read (stale_cache).
	stale bool
	// number is the explicit attempt number the record carries; 0 means its position in
	// the call, which rendering fills in. Only attempt_gap plans one that skips or repeats.
	number int

	// Filled by rendering.
	spanID SpanID
	// countedID is the record a correct processor counts: the subagent's copy of a nested
	// duplicate (the deepest agent level, where the work ran), else spanID.
	countedID SpanID
	parent    SpanID
	start     time.Time
	end       time.Time
}

// plannedCall is one logical tool call as the agent intended it.
type plannedCall struct {
	tool   *toolSpec
	callID string
	// modelID is the id the model gave the call where only model spans record it
	// (LangChain, the OpenAI Agents SDK); "" elsewhere.
	modelID  string
	attempts []*plannedAttempt
	// asset is the data asset a read names in retrystorm.read.asset.
	asset string
	// nested makes a subagent record the same call id again (nested_duplicate).
	nested bool
}

func (c *plannedCall) last() *plannedAttempt { return c.attempts[len(c.attempts)-1] }

// plannedStep is one model turn: the model span, then the tool calls it asked for.
type plannedStep struct {
	calls []*plannedCall
}

// hasTool reports whether the step calls t.
func (s *plannedStep) hasTool(t *toolSpec) bool {
	for _, c := range s.calls {
		if c.tool == t {
			return true
		}
	}
	return false
}

// plan is a whole agent run before rendering.
type plan struct {
	shape       Shape
	scenario    Scenario
	agent       string
	model       string
	runID       string
	steps       []*plannedStep
	citedAssets []string
	rootStatus  StatusCode
}

// calls lists every planned call in start order.
func (p *plan) calls() []*plannedCall {
	var out []*plannedCall
	for _, s := range p.steps {
		out = append(out, s.calls...)
	}
	return out
}

// planner draws the parts of one plan.
type planner struct {
	g      *rng
	traits shapeTraits
	plan   *plan
	// seenArgs holds tool+arguments already planned: calls without a call id are grouped by
	// (parent, tool, args), so two unrelated calls must never share arguments.
	seenArgs map[string]bool
}

var agents = []string{"checkout-agent", "support-agent", "data-analyst", "treasury-agent"}

var models = []string{"gpt-4o", "gpt-4.1-mini", "claude-sonnet-4", "gemini-2.5-pro"}

func newPlanner(g *rng, shape Shape, sc Scenario) *planner {
	p := &plan{shape: shape, scenario: sc, agent: pick(g, agents), model: pick(g, models),
		runID: "run_" + g.hex(8)}
	p.rootStatus = StatusOK
	if traitsOf(shape).unsetSuccess {
		p.rootStatus = StatusUnset
	}
	return &planner{g: g, traits: traitsOf(shape), plan: p, seenArgs: map[string]bool{}}
}

// cleanSteps fills the plan with n successful calls, one to three per model turn.
func (pl *planner) cleanSteps(n int) {
	for n > 0 {
		k := min(n, pl.g.between(1, 3))
		step := &plannedStep{}
		for range k {
			step.calls = append(step.calls, pl.cleanCall(pl.stepTool(step, nil)))
		}
		pl.plan.steps = append(pl.plan.steps, step)
		n -= k
	}
}

// noRecallAfterFailure keeps a clean call from reading as the agent's recovery: when the
// call right after a failed one is a clean call of the same tool with other arguments,
// the processor takes it for a model re-call with changed arguments (the failure is then
// recovered, not unrecovered_failure), which the scenario did not plan. Such a call is
// planned again with another tool. Where calls are keyed by tool alone, any later call of
// the tool would join the failed call's chain (its arguments unseen), so every one is.
func (pl *planner) noRecallAfterFailure() {
	calls := pl.plan.calls()
	for i := 0; i+1 < len(calls); i++ {
		failed := calls[i]
		if st := failed.last().status; st != AttemptError && st != AttemptTimeout {
			continue
		}
		later := calls[i+1 : i+2]
		if pl.traits.keyedByToolAlone() {
			later = calls[i+1:]
		}
		for _, next := range later {
			if next.tool != failed.tool || len(next.attempts) != 1 || next.last().status != AttemptOK ||
				jsonText(next.last().args) == jsonText(failed.last().args) {
				continue
			}
			for _, s := range pl.plan.steps {
				for j, c := range s.calls {
					if c == next {
						s.calls[j] = pl.cleanCall(pl.stepTool(s, failed.tool))
					}
				}
			}
		}
	}
}

// stepTool picks a catalog tool other than not for a call of step s. Where calls are keyed
// by tool alone, it is none of the step's tools either: two calls of one tool in one turn
// would be one call.
func (pl *planner) stepTool(s *plannedStep, not *toolSpec) *toolSpec {
	for {
		o := pick(pl.g, catalog)
		if o != not && !(pl.traits.keyedByToolAlone() && s.hasTool(o)) {
			return o
		}
	}
}

// insertStep places an injected step at a random turn, so signals are not always first or
// last; it returns the step's index.
func (pl *planner) insertStep(s *plannedStep) int {
	i := pl.g.intn(len(pl.plan.steps) + 1)
	pl.insertStepAt(i, s)
	return i
}

func (pl *planner) insertStepAt(i int, s *plannedStep) {
	steps := pl.plan.steps
	steps = append(steps, nil)
	copy(steps[i+1:], steps[i:])
	steps[i] = s
	pl.plan.steps = steps
}

func (pl *planner) callID() string {
	if !pl.traits.callIDs {
		return ""
	}
	switch pl.plan.shape {
	case ShapeClaudeCode:
		return "toolu_01" + pl.g.token(22)
	case ShapeAttemptRecord:
		return "span_" + pl.g.hex(10)
	case ShapeStrands:
		return "tooluse_" + pl.g.token(22)
	}
	return "call_" + pl.g.token(24)
}

// modelID draws the model's id of a call for shapes that record it on model spans only.
func (pl *planner) modelID() string {
	if !pl.traits.modelCallIDs {
		return ""
	}
	return "call_" + pl.g.token(24)
}

// cleanCall plans a call that succeeds on its one attempt.
func (pl *planner) cleanCall(t *toolSpec) *plannedCall {
	c, args, idem := pl.call(t)
	c.attempts = []*plannedAttempt{pl.okAttempt(t, args, t.result(pl.g, args), idem)}
	return c
}

// call starts a call of t with fresh arguments and, for side-effect tools, one idempotency
// key that every executor retry reuses.
func (pl *planner) call(t *toolSpec) (*plannedCall, payload, string) {
	c := &plannedCall{tool: t, callID: pl.callID(), modelID: pl.modelID()}
	args := pl.freshArgs(t)
	if t.asset {
		c.asset, _ = args["table"].(string)
	}
	idem := ""
	if t.sideEffect {
		idem = "idem_" + pl.g.token(16)
	}
	return c, args, idem
}

// freshArgs draws arguments for t that no other call of this trace uses.
func (pl *planner) freshArgs(t *toolSpec) payload {
	for {
		args := t.args(pl.g)
		key := t.name + "\x00" + jsonText(args)
		if !pl.seenArgs[key] {
			pl.seenArgs[key] = true
			return args
		}
	}
}

func (pl *planner) okAttempt(t *toolSpec, args, result payload, idem string) *plannedAttempt {
	a := &plannedAttempt{status: AttemptOK, args: args, result: result, idemKey: idem,
		dur: pl.g.ms(t.okLatency[0], t.okLatency[1])}
	if t.sideEffect {
		a.sideEffect = sideEffectExternal
	} else if pl.plan.shape == ShapeAttemptRecord {
		a.sideEffect = sideEffectNone
	}
	if pl.wire(t) {
		a.sends = []send{{code: 200}}
	}
	pl.tokens(a)
	return a
}

// failedAttempt plans a try that ends in status (error or timeout) with the given args.
func (pl *planner) failedAttempt(t *toolSpec, args payload, status AttemptStatus, idem string) *plannedAttempt {
	a := &plannedAttempt{status: status, args: args, idemKey: idem, failText: failureText(pl.g, status),
		dur: pl.g.ms(40, 900)}
	if status == AttemptTimeout {
		a.dur = pl.g.ms(5000, 5400)
	}
	a.viaResult = pl.traits.failsOnlyViaResult || pl.traits.mcpToolErrors && mcpTools[t.name] && status != AttemptTimeout
	if pl.plan.shape == ShapeAttemptRecord {
		// Only the attempt record spells out side effects of failed tries; other shapes leave
		// them off rather than claim an unknown effect with no outcome.
		a.sideEffect = sideEffectNone
		if t.sideEffect {
			a.sideEffect = sideEffectUnknown
		}
	}
	if pl.wire(t) {
		a.sends = []send{pl.failedSend(a)}
	}
	pl.tokens(a)
	return a
}

// unresolvedAttempt plans a try of a side-effect tool whose outcome was never recorded:
// the request went out, and the record closed with no status and no result. No HTTP span
// below it was exported either.
func (pl *planner) unresolvedAttempt(t *toolSpec, args payload, idem string) *plannedAttempt {
	a := &plannedAttempt{status: AttemptUnknown, args: args, idemKey: idem, sideEffect: sideEffectUnknown,
		dur: pl.g.ms(t.okLatency[0], t.okLatency[1])}
	pl.tokens(a)
	return a
}

func (pl *planner) failedSend(a *plannedAttempt) send {
	switch {
	case a.status == AttemptTimeout:
		return send{errType: "timeout"}
	case a.viaResult:
		// A tool error travels in a successful response.
		return send{code: 200}
	case pl.plan.shape == ShapeMCP:
		// A JSON-RPC error travels in a 200 response body.
		return send{code: 200}
	}
	return send{code: 503, errType: "503"}
}

// failure draws a failing status the shape can express.
func (pl *planner) failure() AttemptStatus {
	if pl.traits.timeouts && pl.g.chance(0.4) {
		return AttemptTimeout
	}
	return AttemptError
}

// wire reports whether attempts of t show their HTTP request as a child span.
func (pl *planner) wire(t *toolSpec) bool {
	return pl.plan.shape == ShapeMCP || (t.http && pl.traits.httpChildren)
}

func (pl *planner) tokens(a *plannedAttempt) {
	if pl.plan.shape != ShapeAttemptRecord {
		return
	}
	a.tokensIn = int64(pl.g.between(300, 1200))
	if a.status == AttemptOK {
		a.tokensOut = int64(pl.g.between(20, 400))
	}
}

// citeCleanAssets makes the answer cite some of the assets it read successfully, as
// answers over data do; such citations are backed and must not raise findings.
func (pl *planner) citeCleanAssets() {
	if !pl.g.chance(0.5) {
		return
	}
	for _, c := range pl.plan.calls() {
		if c.asset != "" && c.last().status == AttemptOK && !contains(pl.plan.citedAssets, c.asset) {
			pl.plan.citedAssets = append(pl.plan.citedAssets, c.asset)
		}
	}
}

// withoutApplicationKeys plans no side effect, idempotency key, read asset or citation
// for a shape whose spans carry none of the application's keys: the truth then claims
// nothing they would have said.
func (pl *planner) withoutApplicationKeys() {
	if !pl.traits.ownNamesOnly {
		return
	}
	pl.plan.citedAssets = nil
	for _, c := range pl.plan.calls() {
		c.asset = ""
		for _, a := range c.attempts {
			a.idemKey, a.sideEffect = "", ""
		}
	}
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
