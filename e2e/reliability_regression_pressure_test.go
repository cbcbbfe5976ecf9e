//go:build e2e

package e2e

// Regression tests for the processor bugs the reliability tests found: storms lost under
// byte pressure, and kept traces forwarded in one request too large for a backend.

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestRegressionPressureShedsIncompleteTrace: under memory pressure the buffer fills with
// traces that show a storm (set aside, decided only when no clean-looking trace is left),
// so the next trace to arrive is the only clean-looking one and is decided at once, from
// its first fragment. Here a storm trace arrives in two requests: the first (chat spans,
// no root) is decided clean and dropped, the second (the storm's attempts and the root)
// is late and dropped. The storm is lost. Expected: every storm trace is kept.
func TestRegressionPressureShedsIncompleteTrace(t *testing.T) {
	s := startOneShot(t, func(c *stormConfig) {
		c.NumShards = 1
		c.MaxBufferedBytes = 64 << 10
		c.DecisionWait, c.RootGrace = "2m", "2m"
		c.CleanPercent = 0
	})
	var requests []ptrace.Traces
	for i := range 12 {
		b := stormTrace(fmt.Sprintf("pressure-fill-%d", i), "lookup_customer", `{"id":1}`)
		b.Spans.At(0).Attributes().PutStr("padding", strings.Repeat("p", 10<<10))
		requests = append(requests, b.Traces)
	}
	x := newSpanBuilder("pressure-split-storm")
	root := pcommon.SpanID{0xee, 1}
	for i := range 8 {
		x.span("chat model", root, int64(i), int64(i+1), map[string]any{
			"gen_ai.operation.name": "chat", "padding": strings.Repeat("q", 2<<10)})
	}
	x.genai(root, "charge_card", "call_x", `{"amount":1}`, 100, 200, nil)
	x.fail("502")
	x.genai(root, "charge_card", "call_x", `{"amount":1}`, 300, 400, nil)
	x.rootWithID(root)
	requests = append(requests, x.request(0, 8), x.request(8, 11))
	spans := 0
	for _, td := range requests {
		spans += td.SpanCount()
		s.client.mustExport(t, td)
	}
	m := waitMetrics(t, s.p, s.cfg.MetricsPort, settleTimeout, "every span received", func(m metrics) bool {
		return int(m.sum(metricSpansReceived, nil)) == spans
	})
	late := m.sum(metricLateSpans, map[string]string{"decision": "dropped"})
	s.p.stop(t)
	recs := readSummaryFile(t, s.cfg.SummaryPath).recordsOf(x.traceID())
	perTrace, _ := spanCounts(s.sink)
	if len(recs) != 1 || perTrace[x.traceID()] != 11 {
		t.Errorf("storm trace split in two requests under memory pressure: %d records, %d of 11 spans in the backend, %v late spans dropped; want its storm record and all its spans",
			len(recs), perTrace[x.traceID()], late)
	}
}

// TestRegressionOverloadAgentsim is the overload regression driven by agentsim, whose SDK
// batches cut traces across requests, with decisions left to memory pressure (and to the
// shutdown at the end): at 10× the buffer bound, storm traces are lost the way
// TestRegressionPressureShedsIncompleteTrace shows.
func TestRegressionOverloadAgentsim(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	cfg := newStormConfig(t, dir)
	cfg.MaxBufferedBytes = overloadBound
	cfg.DecisionWait, cfg.RootGrace = "2m", "2m"
	// 64 MiB requests: the shutdown flush exceeds the usual 4 MiB
	// (TestRegressionLargeKeptTraceExceedsBackendLimit), which is not what this test is about.
	sink := &startFaultyBackend(t, cfg.BackendPort).sink
	p := startStormCollector(t, dir, cfg)
	truthPath := filepath.Join(dir, "truth.jsonl")
	runAgentsim(t, agentsim, "--endpoint", loopback(cfg.OTLPPort), "--rate", "0",
		"--count", strconv.Itoa(overloadTraces), "--seed", "5", "--service", agentService,
		"--truth", truthPath)
	truth := readTruth(t, truthPath)
	spans := 0
	for _, tr := range truth {
		spans += tr.Spans
	}
	m := waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "every span received", func(m metrics) bool {
		return int(m.sum(metricSpansReceived, nil)) == spans
	})
	t.Logf("before shutdown: early decisions %v, late spans %v", m.by(metricEarlyDecisions, "cause"), m.by(metricLateSpans, "decision"))
	p.stop(t)
	if missing := missingRecords(truth, readSummaryFile(t, cfg.SummaryPath)); len(missing) > 0 {
		t.Errorf("%d expected records missing from the summary file:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
	perTrace, _ := spanCounts(sink)
	for _, tr := range truth {
		if tr.Keep && perTrace[tr.TraceID] != tr.Spans {
			t.Errorf("signal trace %s (%s): %d of %d spans in the backend", tr.TraceID, tr.Scenario, perTrace[tr.TraceID], tr.Spans)
		}
	}
}

// TestRegressionLargeKeptTraceExceedsBackendLimit: retry_storm forwards a kept trace in one
// request however large (flushSpans bounds when a batch is sent, not its size), so a
// 100k-span trace reaches the OTLP exporter as one request of about 5 MiB, over the 4 MiB
// that OTLP receivers (the collector, Jaeger, Tempo) accept by default: the backend refuses
// it with RESOURCE_EXHAUSTED, a permanent error, and the trace is lost. Expected: kept
// spans forwarded in batches of at most flushSpans. (Workaround, tested in
// TestReliabilityLargeTraceReachesDefaultBackend: a batch processor with
// send_batch_max_size after retry_storm.)
func TestRegressionLargeKeptTraceExceedsBackendLimit(t *testing.T) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	sink := startBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)
	c := hugeTrace()
	for _, td := range c.requests {
		client.mustExport(t, td)
	}
	waitSettled(t, p, cfg.MetricsPort, hugeSpans)
	m := waitBackendDrained(t, p, cfg.MetricsPort)
	perTrace, _ := spanCounts(sink)
	if got := perTrace[c.trace.traceID()]; got != hugeSpans {
		t.Errorf("a kept 100k-span trace: %d spans reached a backend with the default 4 MiB limit, %v given up by the exporter",
			got, m.sum(metricSendFailed, nil))
	}
}
