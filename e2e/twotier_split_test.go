//go:build e2e

package e2e

import (
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/stormreport"
)

// TestTier2RestartSplitsATraceInFlight pins down what a tier-2 restart costs a trace that
// is in flight, the case TestTwoTierRestart can only observe when its timing produces one.
// A three-attempt executor storm is sent to a tier-2 collector up to and including its first
// attempt (in the order an SDK exports spans: by end time); the collector is restarted; the
// rest of the trace follows. The first process decides its part at shutdown; the second
// process knows nothing of the trace (the decision cache is in memory) and decides the rest
// as a new trace. Both write the record of the part they saw, under one id (trace id + call
// key): the first process one failed attempt, the second the remaining attempts, a storm.
// storm_summary writes the second because it saw more of the call (the id memory it preloads
// from the file at start knows how complete the first line was), and a reader — stormreport,
// or the e2e view of the file — takes the more complete: the storm. Neither is the whole
// call; README.md ("Scaling out") says so.
func TestTier2RestartSplitsATraceInFlight(t *testing.T) {
	dir := t.TempDir()
	trace, storm := executorStormTrace(t)
	first, rest := splitAfterFirstAttempt(t, &trace, storm)
	b := startTier2(t, dir, "b", true)

	sendTraceParts(t, b.cfg.OTLPPort, &trace, first)
	eventually(t, settleTimeout, "b receives the first part", func() (bool, string) {
		b.proc.alive(t)
		_, got, status := b.settled()
		return got == len(first), status
	})
	b.restart(t)
	sendTraceParts(t, b.cfg.OTLPPort, &trace, rest)
	eventually(t, settleTimeout, "b decides the rest", func() (bool, string) {
		b.proc.alive(t)
		ok, got, status := b.settled()
		return ok && got == len(rest), status
	})
	m, err := scrape(b.cfg.MetricsPort)
	if err != nil {
		t.Fatalf("scrape b: %v", err)
	}
	b.proc.stop(t)

	summary := readSummaryFileMust(t, b.cfg.SummaryPath)
	lines := summary.records
	if len(lines) != 2 {
		t.Fatalf("b wrote %d lines for the split trace, want 2 (one per part): %+v", len(lines), lines)
	}
	firstAttempts := slices.DeleteFunc(slices.Clone(storm.AttemptSpanIDs), func(id string) bool { return !slices.Contains(first, id) })
	restAttempts := slices.DeleteFunc(slices.Clone(storm.AttemptSpanIDs), func(id string) bool { return slices.Contains(first, id) })
	want := stormrecord.RecordID(trace.Truth.TraceID, storm.CallKey)
	for i, part := range [][]string{firstAttempts, restAttempts} {
		if got := lines[i]; got.ID != want || !slices.Equal(got.AttemptSpanIDs, part) {
			t.Errorf("line %d: id %s, attempts %v; want id %s (trace id + call key) and the part's attempts %v", i+1, got.ID, got.AttemptSpanIDs, want, part)
		}
	}
	if n := m.sum("otelcol_exporter_storm_summary_records_superseding", nil); n != 1 {
		t.Errorf("the second process wrote %v superseding records, want 1 (its record of the rest of the call)", n)
	}
	if n := m.sum("otelcol_exporter_storm_summary_records_deduplicated", nil); n != 0 {
		t.Errorf("the second process deduplicated %v records, want 0", n)
	}
	records := summary.latest(t)
	report, err := stormreport.Read([]string{b.cfg.SummaryPath})
	if err != nil {
		t.Fatalf("stormreport reads the file: %v", err)
	}
	for who, recs := range map[string][]stormrecord.Record{"the e2e reader": records, "stormreport": report.Records} {
		if len(recs) != 1 || !recs[0].Storm || !slices.Equal(recs[0].AttemptSpanIDs, restAttempts) {
			t.Errorf("%s sees %+v; want the second part's record: storm, attempts %v", who, recs, restAttempts)
		}
	}
	got := records[0]
	kept := backendTraces(b.backend)[trace.Truth.TraceID]
	keptSpans := 0
	if kept != nil {
		keptSpans = len(kept.spans)
	}
	t.Logf("storm %s (%s): %d attempts %v; first part %d spans (%d attempt), rest %d spans; "+
		"read: storm %v, %d attempts %v; kept at the backend: %d of %d spans",
		storm.CallKey, storm.Tool, storm.Attempts, storm.Statuses, len(first), len(firstAttempts), len(rest),
		got.Storm, got.Attempts, got.Statuses, keptSpans, len(trace.Spans))
}

// executorStormTrace generates one OTel GenAI trace with an executor storm of at least three
// attempts, and that storm's expected record.
func executorStormTrace(t *testing.T) (agenttraffic.Trace, agenttraffic.ExpectedRecord) {
	t.Helper()
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{
		Seed: 3, Service: agentService, Base: time.Now().Add(-time.Minute),
		Shapes:    []agenttraffic.Shape{agenttraffic.ShapeGenAI},
		Scenarios: agenttraffic.ScenarioWeights{agenttraffic.ScenarioExecutorStorm: 1},
	})
	if err != nil {
		t.Fatalf("generate a trace: %v", err)
	}
	for _, tr := range gen.Generate(20) {
		for _, rec := range tr.Truth.Records {
			if rec.Storm && rec.CallKey != "" && rec.Layer == agenttraffic.LayerExecutor && rec.Attempts >= 3 {
				return tr, rec
			}
		}
	}
	t.Fatal("no executor storm of three attempts in 20 generated traces")
	return agenttraffic.Trace{}, agenttraffic.ExpectedRecord{}
}

// splitAfterFirstAttempt returns the span ids (hex) of the trace in two parts, in the order
// an SDK exports them (by end time): up to the storm's first attempt, and the rest.
func splitAfterFirstAttempt(t *testing.T, tr *agenttraffic.Trace, storm agenttraffic.ExpectedRecord) (first, rest []string) {
	t.Helper()
	var cut time.Time
	for i := range tr.Spans {
		if hex.EncodeToString(tr.Spans[i].ID[:]) == storm.AttemptSpanIDs[0] {
			cut = tr.Spans[i].End
		}
	}
	if cut.IsZero() {
		t.Fatalf("the storm's first attempt %s is not in the trace", storm.AttemptSpanIDs[0])
	}
	for i := range tr.Spans {
		id := hex.EncodeToString(tr.Spans[i].ID[:])
		if tr.Spans[i].End.After(cut) {
			rest = append(rest, id)
		} else {
			first = append(first, id)
		}
	}
	return first, rest
}
