//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// TestReliabilityEvictedDecisionDropsItsLateSpans: a trace decided in two parts in one
// process. The first part of a three-attempt executor storm (up to its first attempt) is
// decided on decision_wait and kept for its failure; a second storm trace, kept, pushes its
// decision out of a decision cache of one kept trace (no clean decision is there to go
// first), which is counted and logged; then the rest of the first trace arrives. It used to
// start over as a new trace, whose analysis knew none of the first part's payloads and wrote
// the call's record a second time; now it is dropped, counted as forgotten, and the summary
// file holds the first part's record alone.
func TestReliabilityEvictedDecisionDropsItsLateSpans(t *testing.T) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.NumShards = 1
	cfg.DecisionWait, cfg.RootGrace = "1s", "200ms"
	cfg.Processor = yamlMap{"decision_cache": yamlMap{"kept_traces": 1}}
	sink := startBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg)

	trace, storm := executorStormTrace(t)
	first, rest := splitAfterFirstAttempt(t, &trace, storm)
	sendTraceParts(t, cfg.OTLPPort, &trace, first)
	waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "the first part decided and kept", func(m metrics) bool {
		return settledAt(m, len(first))
	})

	other := generate(t, agenttraffic.Config{Seed: 8, Scenarios: agenttraffic.ScenarioWeights{agenttraffic.ScenarioExecutorStorm: 1}}, 1)
	otherSpans, _ := sendWhole(t, dialOTLP(t, cfg.OTLPPort), other, 1)
	waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "another kept trace evicting the first one's decision", func(m metrics) bool {
		return settledAt(m, len(first)+otherSpans) &&
			m.sum(metricPrefix+"decision_cache_evictions", map[string]string{"decision": "kept"}) == 1
	})

	sendTraceParts(t, cfg.OTLPPort, &trace, rest)
	m := waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "the rest dropped", func(m metrics) bool {
		return settledAt(m, len(first)+otherSpans+len(rest))
	})
	if n := m.sum(metricLateSpans, map[string]string{"decision": "forgotten"}); n != float64(len(rest)) {
		t.Errorf("late_spans{decision=forgotten} = %v, want the %d spans of the rest", n, len(rest))
	}
	if n := m.sum(metricSignalEvictions, map[string]string{"reason": "tool_error"}); n != 1 {
		t.Errorf("signal_decisions_evicted{reason=tool_error} = %v, want 1", n)
	}
	p.stop(t)
	if !strings.Contains(p.log(), "a kept signal decision was evicted from the decision cache") {
		t.Error("no log line for the evicted decision")
	}

	id := stormrecord.RecordID(trace.Truth.TraceID, storm.CallKey)
	summary := readSummaryFileMust(t, cfg.SummaryPath)
	firstAttempts := slices.DeleteFunc(slices.Clone(storm.AttemptSpanIDs), func(id string) bool { return !slices.Contains(first, id) })
	var lines []stormrecord.Record
	for _, r := range summary.records {
		if r.ID == id {
			lines = append(lines, r)
		}
	}
	if len(lines) != 1 || !slices.Equal(lines[0].AttemptSpanIDs, firstAttempts) {
		t.Fatalf("lines of record %s: %+v; want the first part's alone (attempts %v)", id, lines, firstAttempts)
	}
	kept := backendTraces(sink)[trace.Truth.TraceID]
	if kept == nil || len(kept.spans) != len(first) {
		t.Errorf("the backend holds %v spans of the trace, want the %d of its first part", kept, len(first))
	}
	t.Logf("storm %s: %d attempts; part one %d spans (attempts %v) kept, part two %d spans dropped as forgotten",
		storm.CallKey, storm.Attempts, len(first), firstAttempts, len(rest))
}
