package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/classify"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

func allKinds(tr *Trace) []string {
	var out []string
	for _, f := range tr.Findings {
		out = append(out, f.Kind)
	}
	return out
}

func TestUnrecoveredFailure(t *testing.T) {
	build := func(rootOpts ...spanOpt) *Trace {
		b := newTrace(10)
		root := b.span("invoke_agent a", noParent, 0, 900, append(agentSpan("a"), rootOpts...)...)
		b.span("execute_tool pay", root, 10, 90, genaiTool("pay", "c1", `{}`, errored)...)
		b.span("execute_tool pay", root, 100, 190, genaiTool("pay", "c1", `{}`, errored)...)
		return analyze(t, b)
	}
	tr := build()
	assert.Contains(t, allKinds(tr), "unrecovered_failure", "green (unset) root over a failed call")
	assert.Equal(t, classify.Exhausted, tr.Units[0].Class)
	assert.Contains(t, allKinds(build(okay)), "unrecovered_failure", "explicit OK root is green too")
	assert.NotContains(t, allKinds(build(errored)), "unrecovered_failure", "near miss: the answer admits failure")
	assert.NotContains(t, allKinds(build(attr("retrystorm.answer.caveat", "payment not confirmed"))), "unrecovered_failure",
		"near miss: the answer carries a caveat")
	f := tr.Findings[0]
	assert.Equal(t, "invoke_agent a", f.Span.Name(), "the finding sits on the green answer")
}

func TestResultDrift(t *testing.T) {
	build := func(second string) *Trace {
		b := newTrace(11)
		root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
		b.span("execute_tool q", root, 10, 90, genaiTool("q", "c1", `{"a":1}`, attr("gen_ai.tool.call.result", `{"rows":1}`))...)
		b.span("execute_tool q", root, 100, 190, genaiTool("q", "c1", `{"a":1}`, attr("gen_ai.tool.call.result", second))...)
		return analyze(t, b)
	}
	assert.Contains(t, allKinds(build(`{"rows":2}`)), "result_drift")
	assert.NotContains(t, allKinds(build(`{ "rows": 1 }`)), "result_drift", "near miss: same result, other whitespace")
}

func TestStaleCacheSuspect(t *testing.T) {
	mem := stalecache.New(100)
	an := New(DefaultConfig(), nil, mem)
	result := attr("gen_ai.tool.call.result", `{"fresh":"2026-11-28"}`)

	warm := newTrace(12)
	wroot := warm.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	warm.span("execute_tool freshness", wroot, 10, 400, genaiTool("freshness", "w1", `{"t":"gold"}`, result)...)
	require.Empty(t, an.Analyze(warm.Traces).Findings)

	build := func(traceByte byte, offset time.Duration, fastMS int64) *Trace {
		b := newTrace(traceByte)
		b.Base = b.Base.Add(offset)
		root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
		b.span("execute_tool freshness", root, 10, 410, genaiTool("freshness", "c1", `{"t":"gold"}`, status(ptrace.StatusCodeError, "timeout"))...)
		b.span("execute_tool freshness", root, 420, 420+fastMS, genaiTool("freshness", "c1", `{"t":"gold"}`, result)...)
		return an.Analyze(b.Traces)
	}
	assert.Contains(t, allKinds(build(13, 2*time.Minute, 1)), "stale_cache_suspect")
	assert.NotContains(t, allKinds(build(14, 2*time.Minute, 300)), "stale_cache_suspect", "near miss: a live-speed read")
	assert.NotContains(t, allKinds(build(15, 10*time.Second, 1)), "stale_cache_suspect", "near miss: the earlier result is younger than min_age")

	fresh := stalecache.New(100)
	b := newTrace(16)
	b.Base = b.Base.Add(2 * time.Minute)
	root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	b.span("execute_tool freshness", root, 10, 410, genaiTool("freshness", "c1", `{"t":"gold"}`, errored)...)
	b.span("execute_tool freshness", root, 420, 421, genaiTool("freshness", "c1", `{"t":"gold"}`, result)...)
	assert.NotContains(t, allKinds(New(DefaultConfig(), nil, fresh).Analyze(b.Traces)), "stale_cache_suspect", "near miss: result never seen before")
}

// TestStaleSuspectAnalysedBeforeItsOriginal: analysed first, the stale read is a suspect
// (with its call's record, and the trace sampled for a divergence); held, it is resolved
// by the analysis of the trace it copied, which returns the match. A live-speed retry is
// no suspect.
func TestStaleSuspectAnalysedBeforeItsOriginal(t *testing.T) {
	mem := stalecache.New(100)
	mem.HoldSuspects(stalecache.Config{MinAge: time.Minute, RecheckWindow: time.Minute, HeldSuspects: 10}, time.Now)
	an := New(DefaultConfig(), nil, mem)
	result := attr("gen_ai.tool.call.result", `{"fresh":"2026-11-28"}`)
	stale := func(traceByte byte, fastMS int64) *Trace {
		b := newTrace(traceByte)
		b.Base = b.Base.Add(2 * time.Minute)
		root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
		b.span("execute_tool freshness", root, 10, 410, genaiTool("freshness", "c1", `{"t":"gold"}`, status(ptrace.StatusCodeError, "timeout"))...)
		b.span("execute_tool freshness", root, 420, 420+fastMS, genaiTool("freshness", "c1", `{"t":"gold"}`, result)...)
		return an.Analyze(b.Traces)
	}
	assert.Empty(t, stale(14, 300).Suspects, "a live-speed retry")
	tr := stale(13, 1)
	assert.NotContains(t, allKinds(tr), "stale_cache_suspect")
	require.Len(t, tr.Suspects, 1)
	s := tr.Suspects[0]
	require.NotNil(t, s.Record)
	assert.Equal(t, s.Unit.Record, s.Record, "the call's own record, which its finding will revise")
	assert.Equal(t, 2, s.Order)
	assert.True(t, tr.Signals.Divergence, "sampled as if it had the finding")
	require.True(t, mem.Hold(stalecache.Suspect{Fingerprint: s.Fingerprint, Start: s.Start, Trace: tr.TraceID, Report: "stale"}).Held)

	warm := newTrace(12)
	wroot := warm.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	warm.span("execute_tool freshness", wroot, 10, 400, genaiTool("freshness", "w1", `{"t":"gold"}`, result)...)
	orig := an.Analyze(warm.Traces)
	require.Len(t, orig.Resolved, 1, "the original's result resolves the held suspect")
	assert.Equal(t, "stale", orig.Resolved[0].Suspect.Report)
	assert.Equal(t, orig.TraceID, orig.Resolved[0].FirstTrace)
	assert.Contains(t, s.Detail(orig.Resolved[0].First, orig.Resolved[0].FirstTrace), "attempt 2 returned in 1ms after a failure")
}

func TestDuplicateSideEffect(t *testing.T) {
	build := func(secondKey string) *Trace {
		b := newTrace(17)
		root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
		b.span("execute_tool charge_card", root, 10, 90, genaiTool("charge_card", "c1", `{"amt":5}`,
			attr("idempotency_key", "idem-7781"), attr("side_effect", "external"), okay)...)
		b.span("execute_tool charge_card", root, 100, 190, genaiTool("charge_card", "c1", `{"amt":5}`,
			attr("idempotency_key", secondKey), attr("side_effect", "external"), okay)...)
		return analyze(t, b)
	}
	tr := build("idem-7781")
	assert.Contains(t, allKinds(tr), "duplicate_side_effect")
	assert.Equal(t, classify.DuplicateSideEffect, tr.Units[0].Class)
	assert.NotContains(t, allKinds(build("idem-9999")), "duplicate_side_effect", "near miss: two keys, two operations")
}

func TestUnresolvedAttempt(t *testing.T) {
	cases := map[string]struct {
		last []spanOpt
		want bool
	}{
		"explicit status empty":                      {[]spanOpt{attr("status", "")}, true},
		"explicit status missing while others carry": {nil, true},
		"no end time":                                {[]spanOpt{attr("status", "ok"), noEnd()}, true},
		"near miss: explicit ok":                     {[]spanOpt{attr("status", "ok")}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := newTrace(18)
			root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
			b.span("pay", root, 10, 90, attr("tool_name", "pay"), attr("span_id", "s1"), attr("attempt", 1), attr("status", "error"))
			b.span("pay", root, 100, 190, append([]spanOpt{attr("tool_name", "pay"), attr("span_id", "s1"), attr("attempt", 2)}, c.last...)...)
			got := analyze(t, b)
			assert.Equal(t, c.want, contains(allKinds(got), "unresolved_attempt"))
		})
	}

	b := newTrace(19)
	root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	b.span("execute_tool transfer", root, 10, 90, genaiTool("transfer", "c1", `{}`, attr("side_effect", "unknown"))...)
	u := onlyUnit(t, analyze(t, b))
	assert.Contains(t, kinds(u), "unresolved_attempt", "side effect pending, unset status, no result")
	assert.Equal(t, []string{"unknown"}, u.Record.Statuses)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestAttemptGap(t *testing.T) {
	build := func(nums ...any) *Trace {
		b := newTrace(20)
		root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
		for i, n := range nums {
			b.span("pay", root, int64(10+i*100), int64(90+i*100), attr("tool_name", "pay"), attr("span_id", "s1"),
				attr("attempt", n), attr("status", "error"))
		}
		return analyze(t, b)
	}
	assert.Contains(t, allKinds(build(1, 3)), "attempt_gap")
	assert.Contains(t, allKinds(build(1, 2, 2)), "attempt_gap")
	assert.Contains(t, allKinds(build(1, "9223372036854775807")), "attempt_gap")
	assert.NotContains(t, allKinds(build(1, "2", 3)), "attempt_gap", "near miss: integer strings count")
	assert.NotContains(t, allKinds(build(2, 1)), "attempt_gap", "near miss: out of order but complete")
}

func TestNestedDuplicateCountedOnce(t *testing.T) {
	b := newTrace(21)
	root := b.span("invoke_agent parent", noParent, 0, 900, agentSpan("parent")...)
	b.span("execute_tool transfer_funds", root, 10, 500, genaiTool("transfer_funds", "toolu_01X", `{"amt":7812}`)...)
	sub := b.span("invoke_agent payments-subagent", root, 20, 480, agentSpan("payments-subagent")...)
	b.span("execute_tool transfer_funds", sub, 30, 470, genaiTool("transfer_funds", "toolu_01X", `{"amt":7812}`)...)
	tr := analyze(t, b)
	u := onlyUnit(t, tr)
	assert.Equal(t, 1, len(u.Attempts()), "counted once")
	assert.False(t, u.Storm)
	assert.Contains(t, kinds(u), "nested_duplicate")
	assert.Equal(t, "invoke_agent payments-subagent", tr.Tree.Nodes[u.Attempts()[0].Agent].Span.Name(), "the subagent record is the one counted")

	near := newTrace(22)
	r := near.span("invoke_agent parent", noParent, 0, 900, agentSpan("parent")...)
	near.span("execute_tool transfer_funds", r, 10, 500, genaiTool("transfer_funds", "toolu_01X", `{}`)...)
	near.span("execute_tool transfer_funds", r, 510, 800, genaiTool("transfer_funds", "toolu_01X", `{}`)...)
	assert.NotContains(t, allKinds(analyze(t, near)), "nested_duplicate", "near miss: same level is an executor retry")
}

func TestUnbackedCitation(t *testing.T) {
	build := func(readOpts ...spanOpt) *Trace {
		b := newTrace(23)
		root := b.span("invoke_agent a", noParent, 0, 900, append(agentSpan("a"),
			attr("retrystorm.answer.cited_assets", []any{"gold.orders", "gold.users"}))...)
		b.span("execute_tool read_table", root, 10, 90, genaiTool("read_table", "c1", `{"t":"gold.users"}`,
			attr("retrystorm.read.asset", "gold.users"))...)
		b.span("execute_tool read_table", root, 100, 190, genaiTool("read_table", "c2", `{"t":"gold.orders"}`,
			append([]spanOpt{attr("retrystorm.read.asset", "gold.orders")}, readOpts...)...)...)
		return analyze(t, b)
	}
	tr := build(errored)
	require.Contains(t, allKinds(tr), "unbacked_citation")
	assert.True(t, tr.Signals.Divergence)
	assert.NotContains(t, allKinds(build()), "unbacked_citation", "near miss: every cited asset was read")
}

func TestIncompleteRecord(t *testing.T) {
	recordAttempt := func(b *traceBuilder, root [8]byte, n int, withArgs bool) {
		opts := []spanOpt{attr("tool_name", "pay"), attr("span_id", "s1"), attr("attempt", n), attr("status", "error"), attr("run_id", "r1")}
		if withArgs {
			opts = append(opts, attr("args_hash", "aa"))
		}
		b.span("pay", root, int64(n*100), int64(n*100+50), opts...)
	}
	b := newTrace(24)
	root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	recordAttempt(b, root, 1, true)
	recordAttempt(b, root, 2, false)
	tr := analyze(t, b)
	u := onlyUnit(t, tr)
	assert.Contains(t, kinds(u), "incomplete_record")
	assert.Equal(t, 1, u.Record.IncompleteAttempts)
	assert.True(t, tr.Signals.Incomplete)

	// Real SDKs that never send a field are not incomplete for lacking it: Vercel v7 sends
	// no explicit status, no attempt number and no tokens on any attempt.
	near := newTrace(25)
	r := near.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	near.span("execute_tool q", r, 10, 90, genaiTool("q", "c1", `{}`, errored)...)
	near.span("execute_tool q", r, 100, 190, genaiTool("q", "c1", `{}`)...)
	assert.NotContains(t, allKinds(analyze(t, near)), "incomplete_record")

	cfg := DefaultConfig()
	cfg.Completeness.Required = append(cfg.Completeness.Required, "run_id") // run_id required, as a gate for the per-attempt record sets it
	gate := newTrace(26)
	gr := gate.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	gate.span("execute_tool q", gr, 10, 90, genaiTool("q", "c1", `{}`)...)
	assert.Contains(t, allKinds(New(cfg, nil, nil).Analyze(gate.Traces)), "incomplete_record", "a required field is missing")
}
