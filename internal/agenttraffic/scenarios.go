package agenttraffic

// Each scenario injects one signal into an otherwise clean plan, in its own model turn(s),
// and nothing else: every other call succeeds on its one attempt.

// staleRead is the read a stale_cache pair shares: the warm trace returns result live, the
// stale trace's retry returns it again from a cache.
type staleRead struct {
	tool   *toolSpec
	args   payload
	result payload
}

// staleTools are reads whose results carry no secrets, so the pair shares no raw PII.
var staleTools = []string{"search_docs", "query_warehouse", "check_freshness", "fetch_url"}

func newStaleRead(g *rng) *staleRead {
	t := toolByName(pick(g, staleTools))
	args := t.args(g)
	return &staleRead{tool: t, args: args, result: t.result(g, args)}
}

// inject adds the scenario's signal to the plan.
func (pl *planner) inject(sc Scenario, stale *staleRead) {
	switch sc {
	case ScenarioTransportStorm:
		pl.transportStorm()
	case ScenarioExecutorStorm:
		pl.executorStorm()
	case ScenarioAgentStorm:
		pl.agentStorm()
	case ScenarioChangedArguments:
		pl.changedArguments()
	case ScenarioRetryAfterSuccess:
		pl.retryAfterSuccess()
	case ScenarioExhaustedGreen:
		pl.exhaustedGreen()
	case ScenarioMCPIsError:
		pl.mcpIsError()
	case ScenarioDuplicateSideEffect:
		pl.duplicateSideEffect()
	case ScenarioStaleCache:
		pl.staleCache(stale)
	case ScenarioNestedDuplicate:
		pl.nestedDuplicate()
	case ScenarioUnbackedCitation:
		pl.unbackedCitation()
	case ScenarioIncompleteRecord:
		pl.incompleteRecord()
	case ScenarioResultDrift:
		pl.resultDrift()
	case ScenarioUnresolvedAttempt:
		pl.unresolvedCall()
	case ScenarioAttemptGap:
		pl.attemptGap()
	}
}

func (pl *planner) single(c *plannedCall) { pl.insertStep(&plannedStep{calls: []*plannedCall{c}}) }

// transportStorm: one tool attempt whose HTTP client resent its request after 5xx or a reset.
func (pl *planner) transportStorm() {
	c := pl.cleanCall(pick(pl.g, catalog))
	a := c.attempts[0]
	n := pl.g.between(2, 3)
	a.sends = nil
	for range n - 1 {
		a.sends = append(a.sends, pick(pl.g, []send{{code: 503, errType: "503"}, {code: 502, errType: "502"},
			{code: 504, errType: "504"}, {errType: "connection_reset"}}))
	}
	a.sends = append(a.sends, send{code: 200})
	a.dur += pl.g.ms(200, 400) * 2
	pl.single(c)
}

// executorStorm: the tool runtime re-ran one call id with the same arguments until it worked.
func (pl *planner) executorStorm() {
	t := pick(pl.g, catalog)
	c, args, idem := pl.call(t)
	for range pl.g.between(1, 2) {
		c.attempts = append(c.attempts, pl.failedAttempt(t, args, pl.failure(), idem))
	}
	c.attempts = append(c.attempts, pl.okAttempt(t, args, t.result(pl.g, args), idem))
	pl.single(c)
}

// agentStorm: after a failure the model called the same tool with the same arguments again,
// under a new call id and in a new turn.
func (pl *planner) agentStorm() {
	t := pick(pl.g, catalog)
	args := pl.freshArgs(t)
	n := pl.g.between(2, 3)
	at := pl.g.intn(len(pl.plan.steps) + 1)
	for i := range n {
		c := &plannedCall{tool: t, callID: pl.callID(), modelID: pl.modelID()}
		if t.asset {
			c.asset, _ = args["table"].(string)
		}
		idem := ""
		if t.sideEffect {
			idem = "idem_" + pl.g.token(16)
		}
		if i < n-1 {
			c.attempts = []*plannedAttempt{pl.failedAttempt(t, args, pl.failure(), idem)}
		} else {
			c.attempts = []*plannedAttempt{pl.okAttempt(t, args, t.result(pl.g, args), idem)}
		}
		pl.insertStepAt(at+i, &plannedStep{calls: []*plannedCall{c}})
	}
}

// changedArguments: the executor rejected the arguments, then re-ran the call id with
// corrected ones.
func (pl *planner) changedArguments() {
	t := pick(pl.g, catalog)
	c, args, idem := pl.call(t)
	bad := pl.failedAttempt(t, args, AttemptError, idem)
	bad.failText = "validation failed: arguments do not match the tool schema"
	fixed := pl.freshArgs(t)
	c.attempts = []*plannedAttempt{bad, pl.okAttempt(t, fixed, t.result(pl.g, fixed), idem)}
	pl.single(c)
}

// retryAfterSuccess: a read succeeded and was run again anyway, with the same answer.
func (pl *planner) retryAfterSuccess() {
	t := pick(pl.g, readTools())
	c, args, _ := pl.call(t)
	result := t.result(pl.g, args)
	c.attempts = []*plannedAttempt{pl.okAttempt(t, args, result, ""), pl.okAttempt(t, args, result, "")}
	pl.single(c)
}

// exhaustedGreen: every attempt failed, and the answer still went out green with no caveat.
func (pl *planner) exhaustedGreen() {
	t := pick(pl.g, catalog)
	c, args, idem := pl.call(t)
	for range pl.g.between(2, 3) {
		c.attempts = append(c.attempts, pl.failedAttempt(t, args, pl.failure(), idem))
	}
	pl.single(c)
}

// mcpIsError: the first attempt's result said isError while its status stayed unset, the
// retry worked.
func (pl *planner) mcpIsError() {
	t := pick(pl.g, catalog)
	c, args, idem := pl.call(t)
	bad := pl.failedAttempt(t, args, AttemptError, idem)
	bad.viaResult = true
	bad.failText = "Error executing tool " + t.name + ": upstream returned 503"
	if len(bad.sends) > 0 {
		bad.sends = []send{pl.failedSend(bad)}
	}
	c.attempts = []*plannedAttempt{bad, pl.okAttempt(t, args, t.result(pl.g, args), idem)}
	pl.single(c)
}

// duplicateSideEffect: two successful attempts with an external effect under one
// idempotency key; the provider answered both the same way.
func (pl *planner) duplicateSideEffect() {
	t := pick(pl.g, sideEffectTools())
	c, args, idem := pl.call(t)
	result := t.result(pl.g, args)
	c.attempts = []*plannedAttempt{pl.okAttempt(t, args, result, idem), pl.okAttempt(t, args, result, idem)}
	pl.single(c)
}

// staleCache: the live read timed out, the retry came back in about a millisecond with the
// result an earlier trace had already returned.
func (pl *planner) staleCache(s *staleRead) {
	c := pl.warmCall(s)
	live := pl.failedAttempt(s.tool, s.args, AttemptTimeout, "")
	cached := pl.okAttempt(s.tool, s.args, s.result, "")
	cached.dur, cached.sends, cached.stale = pl.g.ms(1, 2), nil, true
	c.attempts = []*plannedAttempt{live, cached}
	pl.single(c)
}

// warmCall plans the shared read as a clean call; the warm trace uses it as is.
func (pl *planner) warmCall(s *staleRead) *plannedCall {
	pl.seenArgs[s.tool.name+"\x00"+jsonText(s.args)] = true
	c := &plannedCall{tool: s.tool, callID: pl.callID(), modelID: pl.modelID()}
	if s.tool.asset {
		c.asset, _ = s.args["table"].(string)
	}
	c.attempts = []*plannedAttempt{pl.okAttempt(s.tool, s.args, s.result, "")}
	return c
}

// nestedDuplicate: a subagent records the parent's call again under the same call id.
func (pl *planner) nestedDuplicate() {
	c := pl.cleanCall(pick(pl.g, catalog))
	c.nested = true
	// Room for the subagent's own model turn inside the call.
	c.attempts[0].dur = pl.g.ms(2500, 4000)
	c.attempts[0].sends = nil
	pl.single(c)
}

// unbackedCitation: the answer cites an asset whose only read failed.
func (pl *planner) unbackedCitation() {
	t := pick(pl.g, assetTools())
	c, args, _ := pl.call(t)
	c.asset = "warehouse.audit_" + pl.g.digits(6)
	args["table"] = c.asset
	c.attempts = []*plannedAttempt{pl.failedAttempt(t, args, pl.failure(), "")}
	pl.plan.citedAssets = append(pl.plan.citedAssets, c.asset)
	pl.single(c)
}

// recoveredCall plans a call of any tool that failed once and then succeeded.
func (pl *planner) recoveredCall() *plannedCall {
	t := pick(pl.g, catalog)
	c, args, idem := pl.call(t)
	c.attempts = []*plannedAttempt{pl.failedAttempt(t, args, pl.failure(), idem),
		pl.okAttempt(t, args, t.result(pl.g, args), idem)}
	return c
}

// incompleteRecord: the exporter upstream dropped a field from the last of a call's records.
func (pl *planner) incompleteRecord() {
	c := pl.recoveredCall()
	// The last record loses the field, so the explicit numbers that remain (1) have no gap.
	c.last().drop = pick(pl.g, []string{"attempt", "args_hash"})
	pl.single(c)
}

// driftTools are reads whose answer can change between two runs with the same arguments.
var driftTools = []string{"search_docs", "get_order", "query_warehouse", "check_freshness", "fetch_url"}

// resultDrift: a read succeeded and was run again anyway with the same arguments, and the
// second answer differs from the first.
func (pl *planner) resultDrift() {
	t := toolByName(pick(pl.g, driftTools))
	c, args, _ := pl.call(t)
	first := t.result(pl.g, args)
	second := pl.otherResult(t, args, first)
	c.attempts = []*plannedAttempt{pl.okAttempt(t, args, first, ""), pl.okAttempt(t, args, second, "")}
	pl.single(c)
}

// otherResult draws a result of t for args that differs from prev.
func (pl *planner) otherResult(t *toolSpec, args, prev payload) payload {
	for {
		res := t.result(pl.g, args)
		if jsonText(res) != jsonText(prev) {
			return res
		}
	}
}

// unresolvedCall: a side-effect call's only attempt has no outcome: the attempt record's
// status is empty, other shapes close the span with status unset and no result.
func (pl *planner) unresolvedCall() {
	t := pick(pl.g, sideEffectTools())
	c, args, idem := pl.call(t)
	c.attempts = []*plannedAttempt{pl.unresolvedAttempt(t, args, idem)}
	pl.single(c)
}

// attemptGap: the executor re-ran a failed call and it worked, but the explicit attempt
// numbers skip (the record of a try was lost) or repeat (the counter did not advance).
func (pl *planner) attemptGap() {
	c := pl.recoveredCall()
	numbers := pick(pl.g, [][2]int{{1, 3}, {2, 3}, {1, 1}})
	c.attempts[0].number, c.attempts[1].number = numbers[0], numbers[1]
	pl.single(c)
}
