//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// TestTailSamplingSDKCaptures sends every real SDK capture (testdata/sdk), whole and in
// pieces (one span per request, root last), through config/tail-sampling.yaml with the
// real tail_sampling, and the same requests through standalone retry_storm keeping every
// trace. Every capture that shows a storm, a failure or a finding reaches the backend
// whole; the storm records, and the comparable metrics, equal standalone retry_storm's;
// no raw tool argument or result is on any trace the backend got, nor in the summary file.
func TestTailSamplingSDKCaptures(t *testing.T) {
	g := startGateway(t, nil)
	s := startStandalone(t)
	var deliveries []captureDelivery
	var all []ptrace.Traces
	for _, name := range fixtures.CaptureNames() {
		requests, truth := fixtures.LoadCapture(t, name)
		whole := captureDelivery{name: name, how: "as sent", requests: requests, truth: truth, traceID: onlyTraceID(t, name, requests)}
		pieces := captureDelivery{name: name, how: "in pieces", truth: truth}
		pieces.requests, pieces.traceID = inPiecesRootLast(requests)
		deliveries = append(deliveries, whole, pieces)
		all = append(all, whole.requests...)
		all = append(all, pieces.requests...)
	}
	require.GreaterOrEqual(t, len(deliveries), 2*15, "captures")

	// Both collectors get the requests before either is waited for.
	for _, td := range all {
		g.client.mustExport(t, td)
	}
	sm := s.send(t, all...)
	gm := g.waitDecided(t, len(deliveries))

	gSummary := readSummaryFile(t, g.summaryPath)
	sSummary := readSummaryFile(t, s.cfg.SummaryPath)
	records := gSummary.latest(t)
	t.Run("records equal standalone", func(t *testing.T) {
		require.NotEmpty(t, records, "no storm record at all")
		sameRecords(t, comparableRecords(t, gSummary), comparableRecords(t, sSummary))
	})
	t.Run("metrics equal standalone", func(t *testing.T) {
		sameMetrics(t, gm, sm)
		recordMetricsMatchFile(t, "gateway", gm, gSummary)
		recordMetricsMatchFile(t, "standalone", sm, sSummary)
	})

	backend := backendTraces(g.sink)
	t.Logf("%d of %d deliveries kept by tail_sampling, %d storm records", len(backend), len(deliveries), len(records))
	for _, d := range deliveries {
		t.Run(d.name+"/"+strings.ReplaceAll(d.how, " ", "_"), func(t *testing.T) {
			bt := backend[d.traceID]
			want := d.truth.Reportable(d.name)
			recorded := 0
			if want != nil {
				units, err := d.truth.Units(*want)
				require.NoError(t, err)
				for _, u := range units {
					if u.Recorded() {
						recorded++
					}
				}
				assert.ElementsMatch(t, expectedRecordViews(*want, units), recordViews(d.traceID, records), "records")
			}
			if bt == nil {
				// Left to the probabilistic policies: a clean trace may be dropped.
				assert.Zero(t, recorded, "a trace with %d recorded calls never reached the backend", recorded)
				assert.Empty(t, sSummary.recordsOf(d.traceID), "a trace standalone retry_storm recorded never reached the backend")
				return
			}
			sent := 0
			for _, r := range d.requests {
				sent += r.SpanCount()
			}
			assert.Len(t, bt.spans, sent, "spans at the backend")
			checkNoRawPayload(t, d, bt, gSummary.raw)
		})
	}
}

// TestTailSamplingAgentsim runs agentsim (every scenario, then the realistic mix) through
// config/tail-sampling.yaml and, with the same seed, through standalone retry_storm keeping
// every trace. Every signal trace of the truth reaches the backend whole and every record
// the truth implies is in the gateway's summary file, equal to standalone's; the
// comparable metrics are equal; no raw payload value of any trace is anywhere in what the
// backend got or in the summary file.
func TestTailSamplingAgentsim(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	g := startGateway(t, nil)
	s := startStandalone(t)
	const count = 120
	run := func(port int, truth string) *agentsimRun {
		return startAgentsim(t, agentsim, "--endpoint", loopback(port), "--rate", "0",
			"--count", strconv.Itoa(count), "--every-scenario", "--seed", strconv.Itoa(agentSeed),
			"--service", agentService, "--truth", truth)
	}
	gTruthPath, sTruthPath := filepath.Join(dir, "gateway-truth.jsonl"), filepath.Join(dir, "standalone-truth.jsonl")
	gRun, sRun := run(g.otlpPort, gTruthPath), run(s.cfg.OTLPPort, sTruthPath)
	gRun.wait(t)
	sRun.wait(t)
	truth := readTruth(t, gTruthPath)
	require.Equal(t, traceIDs(truth), traceIDs(readTruth(t, sTruthPath)), "the two agentsim runs sent the same traces")

	spans := 0
	for _, tr := range truth {
		spans += tr.Spans
	}
	waitSettled(t, s.p, s.cfg.MetricsPort, spans)
	sm := waitBackendDrained(t, s.p, s.cfg.MetricsPort)
	gm := g.waitDecided(t, len(truth))

	gSummary := readSummaryFileMust(t, g.summaryPath)
	sSummary := readSummaryFileMust(t, s.cfg.SummaryPath)
	backend := backendTraces(g.sink)
	// A stale_cache_suspect finding needs the earlier trace whose result the stale read
	// returned, most often a clean one tail_sampling dropped: the processor checks stale
	// reads against the retry_storm policy's memory, which saw it, so every finding is
	// there (TestTailSamplingStaleReadOfDroppedTrace forces the case).
	t.Logf("%d stale reads whose earlier trace tail_sampling dropped", len(staleReadsOfDroppedTraces(truth, backend)))
	t.Run("summary file", func(t *testing.T) {
		checkSummaries(t, truth, gSummary.latest(t), gSummary.raw)
	})
	t.Run("records equal standalone", func(t *testing.T) {
		sameRecords(t, comparableRecords(t, gSummary), comparableRecords(t, sSummary))
	})
	t.Run("metrics equal standalone", func(t *testing.T) {
		sameMetrics(t, gm, sm)
		recordMetricsMatchFile(t, "gateway", gm, gSummary)
		recordMetricsMatchFile(t, "standalone", sm, sSummary)
	})
	t.Run("no raw value in any output", func(t *testing.T) {
		var sent []agenttraffic.Trace
		for _, tr := range regenerate(t, agentSeed, count, agentsimBurstInterval, truth) {
			sent = append(sent, *tr)
		}
		search := sentValues(t, sent, ptrace.NewTraces(), nil)
		bytes := search.backend(g.sink)
		search.lines("summary file", string(gSummary.raw), false, nil)
		if l := search.leaks; len(l.rows) > 0 {
			t.Errorf("%d of %d raw values reached the gateway's outputs:\n%s", len(l.seen), len(search.values), l)
		}
		t.Logf("%d raw values searched in %d bytes of backend strings and %d of summary file", len(search.values), bytes, len(gSummary.raw))
	})
	t.Run("backend", func(t *testing.T) {
		_, perSpan := spanCounts(g.sink)
		for id, n := range perSpan {
			if n > 1 {
				t.Errorf("span %v reached the backend %d times", id, n)
			}
		}
		signal, clean := 0, 0
		for i := range truth {
			tr := &truth[i]
			bt := backend[tr.TraceID]
			if tr.Keep {
				signal++
				if bt == nil {
					t.Errorf("signal trace %s (%s, %s, reason %s) never reached the backend", tr.TraceID, tr.Scenario, tr.Shape, tr.Reason)
					continue
				}
				assert.Len(t, bt.spans, tr.Spans, "spans of trace %s (%s) at the backend", tr.TraceID, tr.Scenario)
			} else if bt != nil {
				clean++
			}
			if bt != nil {
				checkNoSecrets(t, tr, bt)
			}
		}
		t.Logf("backend: %d signal traces, %d clean traces kept by tail_sampling's other policies", signal, clean)
	})
}

// staleReadsOfDroppedTraces lists the stale_cache scenario's stale reads whose earlier
// trace (the warm-up trace that first returned the cached result) never reached the
// backend: tail_sampling dropped it, so the retry_storm processor never saw its results.
func staleReadsOfDroppedTraces(truth []agenttraffic.Truth, backend map[string]*backendTrace) map[string]bool {
	out := map[string]bool{}
	for _, tr := range truth {
		if tr.WarmFor != "" && backend[tr.TraceID] == nil {
			out[tr.WarmFor] = true
		}
	}
	return out
}

func traceIDs(truth []agenttraffic.Truth) []string {
	var out []string
	for _, tr := range truth {
		out = append(out, tr.TraceID)
	}
	return out
}

// The slow trace's payload: clean, so only the latency policy keeps it.
const (
	slowArgs   = `{"order_id":"ord-slow-7d41c9e2"}`
	slowArgVal = "ord-slow-7d41c9e2"
	slowResult = `{"status":"shipped-to-4471-elm-street"}`
	slowResVal = "shipped-to-4471-elm-street"
	healthArgs = `{"probe":"healthz-probe-93b1f0"}`
	healthVal  = "healthz-probe-93b1f0"
)

// TestTailSamplingLatencyAndHealthChecks: a clean trace whose root lasts past the gateway's
// latency threshold (45 s) is kept by the slow-traces policy and reaches the backend
// annotated and redacted like a storm's trace; a trace whose root is GET /healthz is
// dropped by the drop policy although it holds a storm (which the retry_storm policy
// samples): it never reaches the backend and gets no storm record, while an agent run
// with a GET /healthz span below its root is kept (the policy matches the root only). A
// storm sent last proves the pipeline ran.
func TestTailSamplingLatencyAndHealthChecks(t *testing.T) {
	g := startGateway(t, nil)

	slow := newSpanBuilder("tail-sampling/slow")
	slowRoot := slow.root(50_000)
	slow.genai(slowRoot, "lookup_order", "call_slow", slowArgs, 100, 300,
		map[string]any{"gen_ai.tool.call.result": slowResult})

	health := healthCheckTrace("tail-sampling/healthz", true, true)
	inner := healthCheckTrace("tail-sampling/healthz-inside", false, true)
	canary := stormTrace("tail-sampling/canary", "charge_card", `{"order":"ord-canary-0001"}`)
	m := g.send(t, 4, whole(slow), whole(health), whole(inner), whole(canary))

	backend := backendTraces(g.sink)
	summary := readSummaryFile(t, g.summaryPath)
	t.Run("canary storm", func(t *testing.T) {
		require.NotNil(t, backend[canary.traceID()], "the canary storm never reached the backend")
		require.NotEmpty(t, summary.recordsOf(canary.traceID()), "the canary storm has no record")
	})
	t.Run("slow clean trace kept and redacted", func(t *testing.T) {
		bt := backend[slow.traceID()]
		require.NotNil(t, bt, "the slow trace never reached the backend")
		assert.Positive(t, m.sum(metricTSPolicyDecisions, map[string]string{"policy": "slow-traces", "decision": "sampled"}),
			"the latency policy sampled nothing")
		assert.Len(t, bt.spans, slow.Spans.Len(), "spans at the backend")
		require.True(t, bt.hasRoot, "root at the backend")
		assert.Equal(t, string(agenttraffic.ReasonClean), strAttr(bt.root, stormrecord.AttrSampling), "sampling reason on the root")
		hashed := 0
		for _, span := range bt.spans {
			if strAttr(span, stormrecord.AttrArgsHash) != "" {
				hashed++
			}
			for _, l := range spanLocated(span) {
				for _, raw := range []string{slowArgVal, slowResVal} {
					if strings.Contains(l.text, raw) {
						t.Errorf("raw payload %q reached the backend in span %q %s", raw, span.Name(), l.where)
					}
				}
			}
		}
		assert.Equal(t, 1, hashed, "tool attempts carrying %s", stormrecord.AttrArgsHash)
		assert.Empty(t, summary.recordsOf(slow.traceID()), "records of a clean trace")
	})
	t.Run("health check dropped with its storm", func(t *testing.T) {
		assert.Nil(t, backend[health.traceID()], "the health-check trace reached the backend")
		assert.Empty(t, summary.recordsOf(health.traceID()), "records of the dropped health-check trace")
		assert.Equal(t, 1.0, m.sum(metricTSPolicyDecisions, map[string]string{"policy": "drop-health-checks", "decision": "dropped"}),
			"traces the drop policy dropped")
		assert.NotContains(t, string(summary.raw), healthVal, "the summary file")
	})
	t.Run("agent run calling a health endpoint kept", func(t *testing.T) {
		assert.NotNil(t, backend[inner.traceID()], "an agent run with a GET /healthz span inside was dropped")
		assert.NotEmpty(t, summary.recordsOf(inner.traceID()), "its storm has no record")
	})
	if t.Failed() {
		t.Logf("metrics:\n%s%s", m.retrystormLines(), tailSamplingLines(m))
	}
}

// TestTailSamplingDropSparesStormsWithNot: with the retry_storm policy under a `not` in the
// drop policy's sub-policies, as the README suggests for teams whose health checks must not
// hide storms, a health check with a storm inside is kept and recorded while a clean one is
// still dropped.
func TestTailSamplingDropSparesStormsWithNot(t *testing.T) {
	g := startGateway(t, func(cfg yamlMap) {
		ts := cfg["processors"].(yamlMap)["tail_sampling"].(yamlMap)
		for _, p := range ts["policies"].([]any) {
			policy := p.(yamlMap)
			if policy["name"] != "drop-health-checks" {
				continue
			}
			drop := policy["drop"].(yamlMap)
			drop["drop_sub_policy"] = append(drop["drop_sub_policy"].([]any), yamlMap{
				"name": "no-agent-signal", "type": "not",
				"not": yamlMap{"not_sub_policy": yamlMap{"name": "agent-signal", "type": "retry_storm"}},
			})
			return
		}
		t.Fatal("config/tail-sampling.yaml has no drop-health-checks policy")
	})
	storm := healthCheckTrace("tail-sampling/not/storm", true, true)
	clean := healthCheckTrace("tail-sampling/not/clean", true, false)
	m := g.send(t, 2, whole(storm), whole(clean))
	backend := backendTraces(g.sink)
	summary := readSummaryFile(t, g.summaryPath)
	assert.NotNil(t, backend[storm.traceID()], "the health check with a storm was dropped")
	assert.NotEmpty(t, summary.recordsOf(storm.traceID()), "its storm has no record")
	assert.Nil(t, backend[clean.traceID()], "the clean health check reached the backend")
	assert.Equal(t, 1.0, m.sum(metricTSPolicyDecisions, map[string]string{"policy": "drop-health-checks", "decision": "dropped"}),
		"traces the drop policy dropped")
	if t.Failed() {
		t.Logf("metrics:\n%s", tailSamplingLines(m))
	}
}

// healthCheckTrace is a trace with a GET /healthz HTTP server span, the root when atRoot
// (a health check) or under an agent root (an agent run calling a health endpoint), whose
// probe_dependency tool call failed and, when storm, was retried and succeeded (a storm);
// otherwise it succeeded at once.
func healthCheckTrace(name string, atRoot, storm bool) *spanBuilder {
	b := newSpanBuilder(name)
	parent := pcommon.SpanID{}
	if !atRoot {
		parent = b.root(1000)
	}
	http := b.span("GET /healthz", parent, 0, 400, map[string]any{
		"http.request.method": "GET", "url.path": "/healthz", "http.route": "/healthz"})
	ok := map[string]any{"gen_ai.tool.call.result": `{"ok":true}`}
	if storm {
		b.genai(http, "probe_dependency", "call_probe", healthArgs, 10, 100, nil)
		b.fail("upstream 503")
	}
	b.genai(http, "probe_dependency", "call_probe", healthArgs, 200, 300, ok)
	return b
}

// whole is the trace in one request.
func whole(b *spanBuilder) ptrace.Traces { return b.request(0, b.Spans.Len()) }

// tailSamplingLines prints tail_sampling's decisions, for failure messages.
func tailSamplingLines(m metrics) string {
	var b strings.Builder
	for _, s := range m {
		if strings.Contains(s.name, "tail_sampling") && !strings.HasSuffix(s.name, "_bucket") {
			fmt.Fprintf(&b, "  %s%v %v\n", s.name, s.labels, s.value)
		}
	}
	return b.String()
}
