package analysis

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// checkTriage holds one trace's triage to its analysis: a trace proved clean must analyse
// clean, with the same counts and tools. It reports whether triage proved it clean.
var stops = map[triageStop]int{}

func checkTriage(t *testing.T, an *Analyzer, td ptrace.Traces, label string) (provedClean, analysedClean bool) {
	t.Helper()
	q := an.Triage(td)
	tr := an.Analyze(td)
	// The triage's own tree must index the trace exactly as a fresh one.
	require.Len(t, q.Tree.Nodes, len(tr.Tree.Nodes), label)
	for i := range q.Tree.Nodes {
		require.Equal(t, tr.Tree.Nodes[i].Parent, q.Tree.Nodes[i].Parent, label)
		require.Equal(t, tr.Tree.Children(int32(i)), q.Tree.Children(int32(i)), label)
	}
	if !q.Clean && tr.Signals.Clean() {
		stops[q.stop]++
	}
	if q.Clean {
		assert.True(t, tr.Signals.Clean(), "%s: triage proved clean, analysis found %+v", label, tr.Signals)
		assert.Empty(t, tr.Findings, label)
		assert.Equal(t, tr.ToolAttempts, q.ToolAttempts, label+": tool attempts")
		assert.Equal(t, tr.Calls, q.Calls, label+": calls")
		assert.Equal(t, tr.DegradedCalls, q.DegradedCalls, label+": degraded calls")
		assert.Equal(t, tr.Unseen, q.Unseen, label+": unseen tool calls")
		assert.ElementsMatch(t, tr.Tools, q.Tools, label+": tools")
		// The results remembered are the ones the analysis remembers.
		var want []resultFingerprint
		for _, u := range tr.Units {
			for _, a := range u.Attempts() {
				if a.ResultHash != "" {
					want = append(want, resultFingerprint{node: a.Node, fingerprint: a.ResultFingerprint})
				}
			}
		}
		assert.ElementsMatch(t, want, q.fingerprints, label+": remembered results")
	}
	// Hand the tree back, so every next triage runs on a reused one.
	an.Recycle(q)
	return q.Clean, tr.Signals.Clean()
}

// TestTriageNeverClearsASignal runs every scenario in every shape, and a realistic mix, and
// every fixture through triage and full analysis side by side. Triage may only ever say
// "clean" when analysis agrees, and it must prove most clean traffic whose tool spans a
// rule names clean, or it saves nothing. The mix's unlisted shapes (a framework no rule
// names) are left out of that share: their calls are found by the full reading only, so
// triage proves none of them clean.
func TestTriageNeverClearsASignal(t *testing.T) {
	an := New(DefaultConfig(), nil, nil)
	for _, name := range fixtures.Names() {
		proved, clean := checkTriage(t, an, fixtures.Load(t, name), name)
		if name == "vercel_v6.json" {
			assert.True(t, clean && proved, "the clean fixture is proved clean")
		}
	}

	every, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 11, EveryScenario: true, Scenarios: agenttraffic.DefaultScenarioWeights()})
	require.NoError(t, err)
	traces := every.Generate(300)
	for i := range traces {
		tr := &traces[i]
		label := fmt.Sprintf("trace %d %s/%s", i, tr.Truth.Shape, tr.Truth.Scenario)
		proved, _ := checkTriage(t, an, agenttraffic.TraceToPdata(tr), label)
		if tr.Truth.Reason != agenttraffic.ReasonClean {
			assert.False(t, proved, label+": a trace with a signal is never proved clean")
		}
	}

	mix, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 12})
	require.NoError(t, err)
	traces = mix.Generate(1000)
	clean, proved, unlistedClean, unlistedProved := 0, 0, 0, 0
	for i := range traces {
		tr := &traces[i]
		p, c := checkTriage(t, an, agenttraffic.TraceToPdata(tr), fmt.Sprintf("mix %d %s/%s", i, tr.Truth.Shape, tr.Truth.Scenario))
		switch {
		case !c:
		case slices.Contains(agenttraffic.UnlistedShapes(), tr.Truth.Shape):
			unlistedClean++
			if p {
				unlistedProved++
			}
		default:
			clean++
			if p {
				proved++
			}
		}
	}
	t.Logf("stops: %v", stops)
	t.Logf("triage proved %d of %d clean traces clean where rules name the tool spans, %d of %d in the unlisted shapes",
		proved, clean, unlistedProved, unlistedClean)
	assert.Greater(t, clean+unlistedClean, 800)
	assert.GreaterOrEqual(t, float64(proved), 0.9*float64(clean), "triage must prove most clean traffic clean")
}

// TestArrivalsChangeNothing: a tree indexed with the notes a shard makes as spans arrive
// triages and analyses exactly as one whose spans are read at the decision, over every
// scenario in every shape and every fixture.
func TestArrivalsChangeNothing(t *testing.T) {
	var tds []ptrace.Traces
	for _, name := range fixtures.Names() {
		tds = append(tds, fixtures.Load(t, name))
	}
	every, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 13, EveryScenario: true, Scenarios: agenttraffic.DefaultScenarioWeights()})
	require.NoError(t, err)
	traces := every.Generate(300)
	for i := range traces {
		tds = append(tds, agenttraffic.TraceToPdata(&traces[i]))
	}
	plain, marked := New(DefaultConfig(), nil, nil), New(DefaultConfig(), nil, nil)
	tools, cites, sends, errs := 0, 0, 0, 0
	for i, td := range tds {
		var arrivals []grouping.Arrival
		for _, span := range tracespans.All(td) {
			a := marked.Arrival(span)
			m := a.Mark
			tool, has := plain.x.Recognize(span, plain.rules.CitedAssetsAttribute)
			require.Equal(t, tool, m&markTool != 0)
			require.Equal(t, has, m&markCites != 0)
			require.Equal(t, toolspan.IsTransport(span), m&markTransport != 0)
			require.Equal(t, span.Status().Code() == ptrace.StatusCodeError, m&markError != 0)
			require.Equal(t, span.SpanID(), a.ID)
			require.Equal(t, span.ParentSpanID(), a.Parent)
			if m&markTransport != 0 {
				sends++
			}
			if m&markError != 0 {
				errs++
			}
			if tool {
				tools++
			}
			if has {
				cites++
			}
			arrivals = append(arrivals, a)
		}
		a := plain.TriageIndexed(plain.Index(td))
		b := marked.TriageIndexed(marked.IndexSpans(td.SpanCount(), tracespans.All(td), arrivals))
		for j := range b.Tree.Nodes {
			require.Equal(t, arrivals[j].Mark, b.Tree.Nodes[j].Mark, "node %d carries its span's mark", j)
			require.Equal(t, a.Tree.Nodes[j].Parent, b.Tree.Nodes[j].Parent, "node %d has the same parent", j)
		}
		require.Equal(t, a.Tree.DuplicateSpanIDs, b.Tree.DuplicateSpanIDs)
		require.Equal(t, a.Tree.CutCycles, b.Tree.CutCycles)
		require.Equalf(t, a.Clean, b.Clean, "trace %d", i)
		require.Equalf(t, a.stop, b.stop, "trace %d", i)
		require.Equalf(t, a.Tools, b.Tools, "trace %d", i)
		ta, tb := plain.AnalyzeTree(a.Tree), marked.AnalyzeTree(b.Tree)
		require.Equalf(t, ta.Signals, tb.Signals, "trace %d", i)
		require.Equalf(t, ta.ToolSpans, tb.ToolSpans, "trace %d", i)
		require.Equalf(t, ta.Findings, tb.Findings, "trace %d", i)
		require.Equalf(t, ta.Calls, tb.Calls, "trace %d", i)
	}
	assert.Positive(t, tools)
	assert.Positive(t, cites, "some span cites assets")
	assert.Positive(t, sends, "some span is an HTTP send")
	assert.Positive(t, errs, "some span has status ERROR")
}

// TestTriageStopsAtEachRule builds a clean trace and breaks it one rule at a time: every
// break must make triage answer "analyse".
func TestTriageStopsAtEachRule(t *testing.T) {
	base := func(extra ...spanOpt) *traceBuilder {
		b := newTrace(90)
		root := b.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
		b.span("execute_tool get_weather", root, 10, 200, genaiTool("get_weather", "call_1", `{"city":"Oslo"}`,
			append([]spanOpt{attr("gen_ai.tool.call.result", `{"content":[{"type":"text","text":"4C"}],"isError": false}`)}, extra...)...)...)
		b.span("execute_tool get_time", root, 210, 300, genaiTool("get_time", "call_2", `{"tz":"CET"}`)...)
		return b
	}
	an := New(DefaultConfig(), nil, nil)
	q := an.Triage(base().Traces)
	require.True(t, q.Clean, "the base trace, an isError: false result included, is proved clean")
	assert.Equal(t, 2, q.ToolAttempts)
	assert.ElementsMatch(t, []string{"get_weather", "get_time"}, q.Tools)

	breaks := map[string]*traceBuilder{
		"isError true":        base(attr("gen_ai.tool.call.result", `{"isError": true}`)),
		"escaped flag name":   base(attr("gen_ai.tool.call.result", `{"is\u0045rror": true}`)),
		"error status":        base(errored),
		"error.type":          base(attr("error.type", "timeout")),
		"explicit status":     base(attr("status", "failed")),
		"empty status":        base(attr("status", "")),
		"no end":              base(noEnd()),
		"attempt number 2":    base(attr("attempt", 2)),
		"cited assets":        base(attr("retrystorm.answer.cited_assets", "doc-1")),
		"missing tool name":   base(attr("gen_ai.tool.name", ""), func(s ptrace.Span) { s.SetName("step") }),
		"success false":       base(attr("success", false)),
		"duplicate call id":   base(attr("gen_ai.tool.call.id", "call_2")),
		"pending side effect": base(attr("side_effect", "unknown"), func(s ptrace.Span) { s.Attributes().Remove("gen_ai.tool.call.result") }),
	}
	transport := base()
	for i := range 2 {
		transport.span("POST", spanIDOf(transport, 1), int64(20+i*10), int64(25+i*10), kind(ptrace.SpanKindClient), attr("http.request.method", "POST"))
	}
	breaks["two HTTP sends under one attempt"] = transport
	nested := base()
	for i := range 2 {
		nested.span("tools/call get_weather", spanIDOf(nested, 1), int64(20+i*10), int64(25+i*10), attr("mcp.method.name", "tools/call"))
	}
	breaks["two nested attempts"] = nested
	fallback := newTrace(91)
	root := fallback.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	fallback.span("execute_tool f", root, 10, 20, genaiTool("f", "", `{"a":1}`)...)
	fallback.span("execute_tool f", root, 30, 40, genaiTool("f", "", `{"a":2}`)...)
	require.True(t, an.Triage(fallback.Traces).Clean, "distinct arguments are distinct calls: told apart by fingerprint, proved clean")
	givenOther := newTrace(97)
	root = givenOther.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	givenOther.span("execute_tool f", root, 10, 20, genaiTool("f", "", `{"a":1}`)...)
	givenOther.span("execute_tool f", root, 30, 40, genaiTool("f", "", `{"b":2}`, attr("args_hash", payload.NewHasher(nil).RawDigest(`{"b":2}`)))...)
	require.True(t, an.Triage(givenOther.Traces).Clean, "a given args hash and other arguments: hashed, distinct calls, proved clean")
	noArgs := newTrace(93)
	root = noArgs.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	noArgs.span("execute_tool f", root, 10, 20, attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "f"))
	noArgs.span("execute_tool f", root, 30, 40, attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "f"))
	breaks["two fallback-keyed calls of one tool without arguments"] = noArgs
	sameArgs := newTrace(94)
	root = sameArgs.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	sameArgs.span("execute_tool f", root, 10, 20, genaiTool("f", "", `{"a":1}`)...)
	sameArgs.span("execute_tool f", root, 30, 40, genaiTool("f", "", `{ "a": 1 }`)...)
	breaks["two fallback-keyed calls of one tool, one args hash"] = sameArgs
	givenHash := newTrace(98)
	root = givenHash.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	givenHash.span("execute_tool f", root, 10, 20, genaiTool("f", "", `{"a":1}`)...)
	givenHash.span("execute_tool f", root, 30, 40, genaiTool("f", "", `{"b":2}`, attr("args_hash", payload.NewHasher(nil).RawDigest(`{"a":1}`)))...)
	breaks["two fallback-keyed calls, one args hash given and one computed"] = givenHash
	idem := newTrace(92)
	root = idem.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	idem.span("execute_tool pay", root, 10, 20, genaiTool("pay", "c1", `{}`, attr("idempotency_key", "k1"), attr("side_effect", "external"))...)
	idem.span("execute_tool pay", root, 30, 40, genaiTool("pay", "c2", `{}`, attr("idempotency_key", "k1"), attr("side_effect", "external"))...)
	breaks["one idempotency key, two external effects"] = idem
	mixed := newTrace(95)
	root = mixed.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	mixed.span("execute_tool pay", root, 10, 20, genaiTool("pay", "c1", `{}`, attr("idempotency_key", "order-42"), attr("side_effect", "external"))...)
	mixed.span("execute_tool pay", root, 30, 40, genaiTool("pay", "c2", `{}`, attr("idem_hash", payload.NewHasher(nil).RawDigest("order-42")), attr("side_effect", "external"))...)
	breaks["one idempotency key sent raw and hashed"] = mixed
	spelled := newTrace(96)
	root = spelled.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	spelled.span("execute_tool fs:read", root, 10, 20, genaiTool("fs:read", "", `{}`, attr("args_hash", "c"))...)
	spelled.span("execute_tool fs", root, 30, 40, genaiTool("fs", "", `{}`, attr("args_hash", "read:c"))...)
	breaks["two identities spelling one fallback key"] = spelled

	for name, b := range breaks {
		q := an.Triage(b.Traces)
		assert.False(t, q.Clean, name)
	}
	for _, name := range []string{"one idempotency key sent raw and hashed", "two identities spelling one fallback key",
		"two fallback-keyed calls, one args hash given and one computed"} {
		assert.False(t, an.Analyze(breaks[name].Traces).Signals.Clean(), name+": analysis finds the signal triage must not clear")
	}
}

func spanIDOf(b *traceBuilder, i int) [8]byte { return b.Spans.At(i).SpanID() }

// TestRememberCleanTakesTheSourceAnalysisTakes: a result element that is not valid JSON is
// skipped for the next result source by both paths, so both remember the same result.
func TestRememberCleanTakesTheSourceAnalysisTakes(t *testing.T) {
	mem := stalecache.New(100)
	an := New(DefaultConfig(), nil, mem)
	b := newTrace(97)
	root := b.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	b.span("execute_tool quote", root, 10, 200, genaiTool("quote", "c1", `{"sku":1}`,
		attr("response", `{"result":{"price":10,}}`), attr("tool_response", "price is 10"))...)
	q := an.Triage(b.Traces)
	require.True(t, q.Clean)
	an.RememberClean(an.Settle(q, ""))
	_, _, ok := mem.Recall(an.Analyze(b.Traces).Units[0].Last().ResultFingerprint)
	assert.True(t, ok)
	assert.Equal(t, 1, mem.Len())
}

// TestRememberCleanFeedsTheStaleCacheCheck: a clean trace dropped after triage alone still
// counts as the earlier trace whose result a stale cache serves.
func TestRememberCleanFeedsTheStaleCacheCheck(t *testing.T) {
	mem := stalecache.New(100)
	an := New(DefaultConfig(), nil, mem)
	b := newTrace(93)
	root := b.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	b.span("execute_tool quote", root, 10, 200, genaiTool("quote", "c1", `{"sku":1}`, attr("gen_ai.tool.call.result", `{"price":10}`))...)
	q := an.Triage(b.Traces)
	require.True(t, q.Clean)
	st := an.Settle(q, "")
	an.Recycle(q) // a settled trace is remembered after its tree went back
	an.RememberClean(st)
	want := an.Analyze(b.Traces).Units[0].Last().ResultFingerprint
	at, trace, ok := mem.Recall(want)
	require.True(t, ok, "the result is remembered exactly as analysis fingerprints it")
	assert.Equal(t, b.TraceID, trace)
	assert.Equal(t, b.Spans.At(1).StartTimestamp(), at)
}

// BenchmarkTriageAgentTraffic triages the default agentsim mix (90% clean), as a shard
// does for every trace: triage, remember a clean trace's results, hand the tree back.
func BenchmarkTriageAgentTraffic(b *testing.B) {
	benchmarkAgentTraffic(b, func(an *Analyzer, td ptrace.Traces) {
		q := an.Triage(td)
		if q.Clean {
			an.RememberClean(an.Settle(q, ""))
		}
		an.Recycle(q)
	})
}

// BenchmarkTriageOutOfCache decides traces the way a shard does, from memory the CPU's
// caches no longer hold: 6000 traces of the default mix (about 200 MB of pdata, decoded
// from OTLP as a receiver does, so laid out as a receiver leaves them), noted beforehand as
// a shard notes spans on arrival, then each indexed, triaged and, when proved clean and not
// among the 5% sampling keeps, its results remembered, else analysed, once per loop. BenchmarkTriageAgentTraffic's 500 traces stay partly cached.
func BenchmarkTriageOutOfCache(b *testing.B) {
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 5})
	require.NoError(b, err)
	traces := gen.Generate(6000)
	an := New(DefaultConfig(), nil, stalecache.New(100000))
	type held struct {
		td       ptrace.Traces
		arrivals []grouping.Arrival
	}
	all := make([]held, 0, len(traces))
	spans := 0
	for i := range traces {
		raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(agenttraffic.TraceToPdata(&traces[i]))
		require.NoError(b, err)
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
		require.NoError(b, err)
		h := held{td: td}
		for _, span := range tracespans.All(td) {
			h.arrivals = append(h.arrivals, an.Arrival(span))
		}
		all = append(all, h)
		spans += td.SpanCount()
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for i, h := range all {
			q := an.TriageIndexed(an.IndexSpans(h.td.SpanCount(), tracespans.All(h.td), h.arrivals))
			if q.Clean && i%20 != 0 { // sampling keeps one clean trace in 20, analysed
				an.RememberClean(an.Settle(q, ""))
			} else {
				an.AnalyzeTree(q.Tree)
			}
			an.Recycle(q)
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*spans), "ns/span")
}

// benchmarkAgentTraffic runs each of 500 traces of the default agentsim mix through each
// per loop and reports time per span.
//
// Three mixes: every shape; the shapes whose tool spans a rule names (the unlisted
// framework's apart, which only a full reading of the model's messages sees), what
// following the model costs where it can change nothing; and the unlisted framework's
// alone, whose clean traces triage cannot prove clean (the full analysis finds their
// attempts).
func benchmarkAgentTraffic(b *testing.B, each func(*Analyzer, ptrace.Traces)) {
	listed := slices.DeleteFunc(agenttraffic.AllShapes(), func(s agenttraffic.Shape) bool {
		return slices.Contains(agenttraffic.UnlistedShapes(), s)
	})
	for _, mix := range []struct {
		name   string
		shapes []agenttraffic.Shape
	}{{"every", nil}, {"listed", listed}, {"unlisted", agenttraffic.UnlistedShapes()}} {
		b.Run("shapes="+mix.name, func(b *testing.B) { benchmarkTraffic(b, mix.shapes, each) })
	}
}

func benchmarkTraffic(b *testing.B, shapes []agenttraffic.Shape, each func(*Analyzer, ptrace.Traces)) {
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 5, Shapes: shapes})
	require.NoError(b, err)
	traces := gen.Generate(500)
	tds := make([]ptrace.Traces, len(traces))
	spans := 0
	for i := range traces {
		tds[i] = agenttraffic.TraceToPdata(&traces[i])
		spans += tds[i].SpanCount()
	}
	an := New(DefaultConfig(), nil, stalecache.New(100000))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, td := range tds {
			each(an, td)
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*spans), "ns/span")
}

// FuzzTriageNeverClearsASignal builds small traces from fuzzed fields — tool names, call
// ids, args and their hashes, idempotency keys raw or hashed, side effects, results,
// attempt numbers, statuses, HTTP sends, parents — and fails when triage proves clean a
// trace the analysis finds a signal in.
func FuzzTriageNeverClearsASignal(f *testing.F) {
	f.Add("fs:read", "fs", "", "", "c", "read:c", "k", uint8(0), uint8(0))
	f.Add("pay", "pay", "c1", "c2", `{"a":1}`, `{ "a": 1 }`, "order-42", uint8(7), uint8(3))
	f.Add("t", "t", "", "", `{"a":1}`, `{"a":2}`, "", uint8(0x55), uint8(0xaa))
	hashOf := payload.NewHasher(nil).RawDigest
	f.Fuzz(func(t *testing.T, toolA, toolB, callA, callB, argsA, argsB, idem string, shape, parents uint8) {
		b := newTrace(99)
		root := b.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
		ids := []pcommon.SpanID{root}
		for i := range 4 {
			bit := func(n int) bool { return shape>>((i+n)%8)&1 == 1 }
			tool, call, args := toolA, callA, argsA
			if i%2 == 1 {
				tool, call, args = toolB, callB, argsB
			}
			opts := []spanOpt{attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", tool)}
			if call != "" && bit(0) {
				opts = append(opts, attr("gen_ai.tool.call.id", call))
			}
			if bit(1) {
				opts = append(opts, attr("args_hash", args))
			} else {
				opts = append(opts, attr("gen_ai.tool.call.arguments", args))
			}
			if idem != "" && bit(2) {
				if bit(3) {
					opts = append(opts, attr("idem_hash", hashOf(idem)))
				} else {
					opts = append(opts, attr("idempotency_key", idem))
				}
				opts = append(opts, attr("side_effect", "external"))
			}
			if bit(4) {
				opts = append(opts, attr("gen_ai.tool.call.result", `{"isError": false, "r": "`+args+`"}`))
			}
			if bit(5) && bit(6) {
				opts = append(opts, attr("attempt", int64(i%3)))
			}
			parent := ids[int(parents>>(2*i)&3)%len(ids)]
			ids = append(ids, b.span("execute_tool "+tool, parent, int64(10+i*20), int64(20+i*20), opts...))
			if bit(7) {
				b.span("POST", ids[len(ids)-1], int64(11+i*20), int64(12+i*20), kind(ptrace.SpanKindClient), attr("http.request.method", "POST"))
			}
		}
		an := New(DefaultConfig(), nil, nil)
		tr := an.Analyze(b.Traces)
		if q := an.Triage(b.Traces); q.Clean && !tr.Signals.Clean() {
			t.Fatalf("triage proved clean a trace analysis found %+v (findings %v)", tr.Signals, tr.Findings)
		}
	})
}

// BenchmarkAnalyzeAgentTraffic analyses the same mix as BenchmarkTriageAgentTraffic: what
// triage saves on a clean trace, and what a kept or signal trace still costs.
func BenchmarkAnalyzeAgentTraffic(b *testing.B) {
	benchmarkAgentTraffic(b, func(an *Analyzer, td ptrace.Traces) {
		q := an.Index(td)
		an.AnalyzeTree(q.Tree)
		an.Recycle(q)
	})
}

// TestRecycleLetsAHugeTraceGo: the spare tree and scratch of an analyzer do not keep the
// size of the largest trace they saw.
func TestRecycleLetsAHugeTraceGo(t *testing.T) {
	an := New(DefaultConfig(), nil, nil)
	big := newTrace(98)
	root := big.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	for i := range maxReusedSpans + 1 {
		big.span("step", root, int64(i%900), int64(i%900+1))
	}
	q := an.Triage(big.Traces)
	require.True(t, q.Clean)
	an.Recycle(q)
	assert.Nil(t, an.spare, "the huge tree is not kept")
	assert.Zero(t, cap(an.scratch.isTool))

	small := newTrace(99)
	small.span("invoke_agent a", noParent, 0, 10, agentSpan("a")...)
	q = an.Triage(small.Traces)
	an.Recycle(q)
	assert.NotNil(t, an.spare, "an ordinary tree is kept for the next trace")
}

// A Settled outlives its tree: triaging other traces on the same analyzer (which reuses the
// spare tree and the fingerprints scratch) before the settled trace is remembered must not change it.
func TestSettledSurvivesLaterTriages(t *testing.T) {
	mem := stalecache.New(100)
	an := New(DefaultConfig(), nil, mem)
	a := newTrace(91)
	ra := a.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
	a.span("execute_tool quote", ra, 10, 200, genaiTool("quote", "c1", `{"sku":1}`, attr("gen_ai.tool.call.result", `{"price":10}`))...)
	qa := an.Triage(a.Traces)
	require.True(t, qa.Clean)
	st := an.Settle(qa, "")
	an.Recycle(qa)

	b := newTrace(92)
	rb := b.span("invoke_agent b", noParent, 0, 1000, agentSpan("b")...)
	b.span("execute_tool lookup", rb, 50, 300, genaiTool("lookup", "c9", `{"sku":2}`, attr("gen_ai.tool.call.result", `{"price":99}`))...)
	qb := an.Triage(b.Traces)
	require.True(t, qb.Clean)
	an.Recycle(qb)

	an.RememberClean(st)
	assert.Equal(t, []string{"quote"}, st.Tools)
	require.Equal(t, 1, mem.Len())
	plain := New(DefaultConfig(), nil, nil) // fingerprints without remembering
	at, trace, ok := mem.Recall(plain.Analyze(a.Traces).Units[0].Last().ResultFingerprint)
	require.True(t, ok, "a's own result, not the one b's triage left in the scratch")
	assert.Equal(t, a.TraceID, trace)
	assert.Equal(t, a.Spans.At(1).StartTimestamp(), at)
}
