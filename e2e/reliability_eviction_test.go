//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/stormreport"
)

// TestReliabilityEvictedDecisionKeepsTheMostCompleteRecord: a trace decided in two parts
// in one process. The first part of a three-attempt executor storm (up to its first attempt)
// is decided on decision_wait and kept for its failure; a second storm trace, kept, pushes
// its decision out of a decision cache of one kept trace; then the rest of the first trace
// arrives, starts over as a new trace and is decided on its own. The summary file holds a
// record for each part under the call's one id, the second written because it saw more of
// the call, and a reader sees that one.
func TestReliabilityEvictedDecisionKeepsTheMostCompleteRecord(t *testing.T) {
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
	m := waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "the rest decided as a new trace", func(m metrics) bool {
		return settledAt(m, len(first)+otherSpans+len(rest))
	})
	if late := m.sum(metricPrefix+"late_spans", nil); late != 0 {
		t.Fatalf("%v spans were taken as late: the decision was not forgotten", late)
	}
	p.stop(t)

	id := stormrecord.RecordID(trace.Truth.TraceID, storm.CallKey)
	var lines []stormrecord.Record
	summary := readSummaryFileMust(t, cfg.SummaryPath)
	for _, r := range summary.records {
		if r.ID == id {
			lines = append(lines, r)
		}
	}
	firstAttempts := slices.DeleteFunc(slices.Clone(storm.AttemptSpanIDs), func(id string) bool { return !slices.Contains(first, id) })
	restAttempts := slices.DeleteFunc(slices.Clone(storm.AttemptSpanIDs), func(id string) bool { return slices.Contains(first, id) })
	if len(lines) != 2 || !slices.Equal(lines[0].AttemptSpanIDs, firstAttempts) || !slices.Equal(lines[1].AttemptSpanIDs, restAttempts) {
		t.Fatalf("lines of record %s: %+v; want the first part's (attempts %v), then the rest's (attempts %v)", id, lines, firstAttempts, restAttempts)
	}
	if n := m.sum("otelcol_exporter_storm_summary_records_superseding", nil); n != 1 {
		t.Errorf("records_superseding = %v, want 1", n)
	}
	report, err := stormreport.Read([]string{cfg.SummaryPath})
	if err != nil {
		t.Fatalf("stormreport reads the file: %v", err)
	}
	records := summary.latest(t)
	for who, recs := range map[string][]stormrecord.Record{"the e2e reader": records, "stormreport": report.Records} {
		i := slices.IndexFunc(recs, func(r stormrecord.Record) bool { return r.ID == id })
		if i < 0 || !recs[i].Storm || !slices.Equal(recs[i].AttemptSpanIDs, restAttempts) {
			t.Errorf("%s sees %s; want the rest's record: storm, attempts %v", who, describe(recs, i), restAttempts)
		}
	}
	kept := backendTraces(sink)[trace.Truth.TraceID]
	t.Logf("storm %s: %d attempts; part one %d spans (attempts %v), part two %d spans (attempts %v); %d spans at the backend",
		storm.CallKey, storm.Attempts, len(first), firstAttempts, len(rest), restAttempts, len(kept.spans))
}

func describe(recs []stormrecord.Record, i int) string {
	if i < 0 {
		return "no record"
	}
	return fmt.Sprintf("storm %v, attempts %v", recs[i].Storm, recs[i].AttemptSpanIDs)
}
