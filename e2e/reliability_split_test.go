//go:build e2e

package e2e

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

const (
	splitSeed   = 23
	splitTraces = 48
	// splitCleanPercent keeps about half the clean traces, so a kept clean trace (whose late
	// spans must carry its threshold) and a dropped one are both at hand.
	splitCleanPercent = 50
	// lateSecret is a raw argument a late tool span carries; redaction must remove it.
	lateSecret = "4111-1111-1111-1111-late"
)

// TestReliabilitySplitAndLateTraffic sends the spans of 48 agent traces shuffled across
// about a hundred requests (each request mixing many traces and instrumentation scopes, as
// an SDK's batch does), then, after the decisions, more spans of a kept storm trace, a kept
// clean trace and a dropped trace. The split traces must be decided as if each had arrived
// whole; late spans follow their trace's decision and are counted.
func TestReliabilitySplitAndLateTraffic(t *testing.T) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	// Long enough that every span of the shuffled traffic arrives before any decision.
	cfg.DecisionWait, cfg.RootGrace = "6s", "3s"
	cfg.CleanPercent = splitCleanPercent
	sink := startBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)

	weights := agenttraffic.ScenarioWeights{agenttraffic.ScenarioClean: 4}
	for sc := range withoutStaleCache() {
		if sc != agenttraffic.ScenarioClean {
			weights[sc] = 1
		}
	}
	traces := generate(t, agenttraffic.Config{Seed: splitSeed, Scenarios: weights}, splitTraces)
	// The late-span part needs a GenAI storm trace, whatever the mix's shapes drew.
	traces = append(traces, generate(t, agenttraffic.Config{Seed: splitSeed + 1, Shapes: []agenttraffic.Shape{agenttraffic.ShapeGenAI},
		Scenarios: agenttraffic.ScenarioWeights{agenttraffic.ScenarioExecutorStorm: 1}}, 1)...)
	truth := truthOf(traces)

	// A storm trace whose root never arrives (an agent still running, or a lost root): a
	// step span under the missing root and two attempts half a second apart. Only
	// decision_wait decides it. (Attempts directly under the missing root are covered by
	// TestRegressionOrphanSiblingAttempts.)
	rootless := newSpanBuilder("split-rootless")
	step := rootless.span("step 1", pcommon.SpanID{0xaa, 1}, 5, 95, map[string]any{"gen_ai.operation.name": "agent_step"})
	rootless.genai(step, "fetch_url", "call_rootless", `{"url":"https://example.test/a"}`, 10, 50, nil)
	rootless.fail("timeout")
	rootless.genai(step, "fetch_url", "call_rootless", `{"url":"https://example.test/a"}`, 60, 90, nil)
	first, second := rootless.request(0, 2), rootless.request(2, 3)

	requests := shuffledRequests(traces, splitSeed)
	start := time.Now()
	spans := first.SpanCount()
	client.mustExport(t, first)
	for _, td := range requests {
		spans += td.SpanCount()
		client.mustExport(t, td)
	}
	sendTime := time.Since(start)
	time.Sleep(500 * time.Millisecond)
	client.mustExport(t, second)
	spans += 1
	t.Logf("sent %d spans of %d traces in %d requests in %s", spans, len(traces)+1, len(requests)+2, sendTime.Round(time.Millisecond))
	if sendTime > 2*time.Second {
		t.Fatalf("sending took %s, longer than root_grace allows for the split traffic to count as on time", sendTime)
	}

	waitSettled(t, p, cfg.MetricsPort, spans)
	m := waitBackendDrained(t, p, cfg.MetricsPort)
	th := cleanThreshold(t, splitCleanPercent)
	t.Run("split traces decided whole", func(t *testing.T) {
		if late := m.sum(metricLateSpans, nil); late != 0 {
			t.Errorf("%v late spans before any span was late", late)
		}
		f := readSummaryFile(t, cfg.SummaryPath)
		records := withoutTrace(f.records, rootless.traceID())
		checkSummaries(t, truth, records, f.raw)
		checkBackendExactly(t, truth, sink, th, rootless.traceID())
		if recs := f.recordsOf(rootless.traceID()); len(recs) != 1 || recs[0].Attempts != 2 || !recs[0].Storm {
			t.Errorf("the rootless trace split over two requests: records %+v, want one storm of 2 attempts", recs)
		}
	})

	// Late spans: a kept storm trace, a kept clean trace, a dropped clean trace.
	var stormT, keptClean, dropped *agenttraffic.Trace
	for i := range traces {
		tr := &traces[i]
		switch {
		case stormT == nil && tr.Truth.Storms > 0 && tr.Truth.Shape == agenttraffic.ShapeGenAI:
			stormT = tr
		case tr.Truth.Reason == agenttraffic.ReasonClean && keepsClean(t, th, tr.Truth.TraceID) && keptClean == nil:
			keptClean = tr
		case tr.Truth.Reason == agenttraffic.ReasonClean && !keepsClean(t, th, tr.Truth.TraceID) && dropped == nil:
			dropped = tr
		}
	}
	if stormT == nil || keptClean == nil || dropped == nil {
		t.Fatalf("the traffic lacks a GenAI storm trace (%v), a kept clean trace (%v) or a dropped one (%v)",
			stormT != nil, keptClean != nil, dropped != nil)
	}
	summaryBefore := readSummaryFile(t, cfg.SummaryPath)
	lateIDs := map[string][]string{}
	lateCount := 0
	for _, tr := range []*agenttraffic.Trace{stormT, keptClean, dropped} {
		for i := range 3 {
			td, ids := lateSpans(tr, i)
			lateIDs[tr.Truth.TraceID] = append(lateIDs[tr.Truth.TraceID], ids...)
			lateCount += td.SpanCount()
			client.mustExport(t, td)
		}
	}
	perTrace := len(lateIDs[stormT.Truth.TraceID])
	waitSettled(t, p, cfg.MetricsPort, spans+lateCount)
	m = waitBackendDrained(t, p, cfg.MetricsPort)
	t.Run("late spans follow the decision", func(t *testing.T) {
		late := m.by(metricLateSpans, "decision")
		if late["kept"] != 2*perTrace || late["dropped"] != perTrace {
			t.Errorf("late spans %v, want kept %d, dropped %d", late, 2*perTrace, perTrace)
		}
		if got := int(m.sum(metricSpansDropped, map[string]string{"cause": "late"})); got != perTrace {
			t.Errorf("spans dropped as late %d, want %d", got, perTrace)
		}
		if r, f, d, b, ok := accounted(m); !ok || b != 0 {
			t.Errorf("spans received %d != forwarded %d + dropped %d + buffered %d", r, f, d, b)
		}
		backend := backendTraces(sink)
		spanOf := func(traceID, spanID string) (ptrace.Span, bool) {
			bt := backend[traceID]
			if bt == nil {
				return ptrace.Span{}, false
			}
			span, ok := bt.spans[spanID]
			return span, ok
		}
		for _, id := range lateIDs[stormT.Truth.TraceID] {
			span, ok := spanOf(stormT.Truth.TraceID, id)
			if !ok {
				t.Errorf("late span %s of the kept storm trace never reached the backend", id)
				continue
			}
			for _, s := range spanStrings(span) {
				if strings.Contains(s, lateSecret) {
					t.Errorf("late tool span %s reached the backend with its raw arguments", id)
				}
			}
			if _, ok := span.Attributes().Get("gen_ai.tool.call.arguments"); ok {
				t.Errorf("late tool span %s kept gen_ai.tool.call.arguments; redaction removes it", id)
			}
		}
		for _, id := range lateIDs[keptClean.Truth.TraceID] {
			span, ok := spanOf(keptClean.Truth.TraceID, id)
			if !ok {
				t.Errorf("late span %s of the kept clean trace never reached the backend", id)
				continue
			}
			if got := otelThreshold(span.TraceState().AsRaw()); got != th.TValue() {
				t.Errorf("late span %s of a kept clean trace: tracestate %q, want threshold %s", id, span.TraceState().AsRaw(), th.TValue())
			}
		}
		for _, id := range lateIDs[dropped.Truth.TraceID] {
			if _, ok := spanOf(dropped.Truth.TraceID, id); ok {
				t.Errorf("late span %s of a dropped trace reached the backend", id)
			}
		}
		after := readSummaryFile(t, cfg.SummaryPath)
		if len(after.records) != len(summaryBefore.records) {
			t.Errorf("late spans changed the summary file: %d records, %d before (late spans are not analysed)",
				len(after.records), len(summaryBefore.records))
		}
		t.Logf("late spans: %d per trace; kept storm and kept clean trace forwarded, dropped trace dropped: %v", perTrace, late)
	})
}

// shuffledRequests deals every span of the traces, in a random order, into requests of 1 to
// 60 spans; within a request, spans share one resource per service and one scope per
// instrumentation, as an SDK batch does.
func shuffledRequests(traces []agenttraffic.Trace, seed uint64) []ptrace.Traces {
	type located struct {
		service, scope string
		span           ptrace.Span
	}
	var all []located
	for i := range traces {
		td := agenttraffic.TraceToPdata(&traces[i])
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					all = append(all, located{svc.Str(), ss.Scope().Name(), s})
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(seed, seed))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var out []ptrace.Traces
	for len(all) > 0 {
		n := min(1+r.IntN(60), len(all))
		td := ptrace.NewTraces()
		scopes := map[[2]string]ptrace.SpanSlice{}
		resources := map[string]ptrace.ResourceSpans{}
		for _, l := range all[:n] {
			rs, ok := resources[l.service]
			if !ok {
				rs = td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", l.service)
				resources[l.service] = rs
			}
			key := [2]string{l.service, l.scope}
			spans, ok := scopes[key]
			if !ok {
				ss := rs.ScopeSpans().AppendEmpty()
				ss.Scope().SetName(l.scope)
				spans = ss.Spans()
				scopes[key] = spans
			}
			l.span.CopyTo(spans.AppendEmpty())
		}
		out = append(out, td)
		all = all[n:]
	}
	return out
}

// lateSpans builds request i of late spans for a trace already decided: a GenAI tool
// attempt carrying a raw secret argument and a chat span, under the trace's root, with new
// span ids, ending now.
func lateSpans(tr *agenttraffic.Trace, i int) (ptrace.Traces, []string) {
	b := continueTrace(pcommon.TraceID(tr.ID), tr.Service, "", time.Now().Add(-time.Second))
	root := pcommon.SpanID(tr.Root().ID)
	tool := pcommon.SpanID{0xfe, byte(i), 0, 1, 2, 3, 4, 5}
	b.spanWithID(tool, "execute_tool lookup_customer", root, 0, 1000, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_customer",
		"gen_ai.tool.call.id":        "call_late_" + string(rune('a'+i)),
		"gen_ai.tool.call.arguments": `{"card":"` + lateSecret + `"}`,
	})
	chat := pcommon.SpanID{0xfe, byte(i), 1, 1, 2, 3, 4, 5}
	b.spanWithID(chat, "chat late-model", root, 0, 1000, map[string]any{"gen_ai.operation.name": "chat"})
	return b.Traces, []string{tool.String(), chat.String()}
}
