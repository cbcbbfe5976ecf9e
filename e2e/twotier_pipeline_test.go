//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// The traffic of the two-tier test: a fixed seed, every scenario once, then the realistic
// mix. It holds five stale_cache pairs; which tier-2 collector a trace goes to depends on
// the free ports the collectors got (load_balancing hashes trace ids onto a ring built from
// the endpoint names), so a run usually has pairs on one collector and pairs across the
// two, and the test logs how many of each.
const (
	twoTierSeed  = 11
	twoTierCount = 300
)

// TestTwoTierAgainstGroundTruth runs agentsim into tier 1 (load_balancing by trace id) in
// front of two tier-2 collectors running retry_storm, and, for comparison, into a single
// retry_storm collector fed the same spans by tier 1. It holds the tier-2 output to
// agentsim's ground truth: every trace went whole to one tier-2 collector; every expected
// storm record is in exactly one of the two summary files, in the file of the collector
// that received the trace; the two backends together received exactly the kept traces of
// the consistent rule, none at both; the tier-2 metrics add up to the truth; and the two
// tiers keep the same traces and write the same records as the single collector.
func TestTwoTierAgainstGroundTruth(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	// Both tier-2 collectors send their records to one logs backend.
	logsPort := freePorts(t, 1)[0]
	logs := startLogsBackend(t, logsPort)
	signals := func(c *stormConfig) { withSignals(t, c, logsPort) }
	a := startTier2(t, dir, "a", true, signals)
	b := startTier2(t, dir, "b", true, signals)
	single := startTier2(t, dir, "single", false)
	tier1, tier1Port, tier1Metrics := startTier1(t, dir, single.cfg.OTLPPort, a, b)

	truthPath := filepath.Join(dir, "truth.jsonl")
	runAgentsim(t, agentsim, "--endpoint", loopback(tier1Port), "--rate", "0",
		"--count", strconv.Itoa(twoTierCount), "--every-scenario", "--seed", strconv.Itoa(twoTierSeed),
		"--service", agentService, "--truth", truthPath)
	truth := readTruth(t, truthPath)
	total := 0
	for _, tr := range truth {
		total += tr.Spans
	}

	procs := []*collectorProcess{tier1, a.proc, b.proc, single.proc}
	eventually(t, settleTimeout, "tier 1 sent every span and every tier-2 collector decided them", func() (bool, string) {
		aliveAll(t, procs...)
		m, err := scrape(tier1Metrics)
		if err != nil {
			return false, err.Error()
		}
		lb := int(m.sum("otelcol_exporter_sent_spans", map[string]string{"exporter": "load_balancing"}))
		copied := int(m.sum("otelcol_exporter_sent_spans", map[string]string{"exporter": "otlp_grpc/single"}))
		okA, gotA, stA := a.settled()
		okB, gotB, stB := b.settled()
		okS, gotS, stS := single.settled()
		status := fmt.Sprintf("tier 1 sent %d (load_balancing) and %d (single) of %d; %s; %s; %s", lb, copied, total, stA, stB, stS)
		return lb == total && copied == total && okA && okB && okS && gotA+gotB == total && gotS == total, status
	})
	mA, errA := scrape(a.cfg.MetricsPort)
	mB, errB := scrape(b.cfg.MetricsPort)
	if errA != nil || errB != nil {
		t.Fatalf("scrape tier-2 metrics: %v, %v", errA, errB)
	}
	for _, p := range procs {
		p.stop(t)
	}

	route := tapRouting(a, b)
	t.Run("routing", func(t *testing.T) { checkTwoTierRouting(t, truth, route, total) })
	truth, moved := withoutCrossInstanceStaleCache(t, truth, route.process)
	th := cleanThreshold(t, cleanPercent)
	want := expect(t, truth, th)
	summaryA, summaryB := readSummaryFileMust(t, a.cfg.SummaryPath), readSummaryFileMust(t, b.cfg.SummaryPath)
	recA, rawA, findA := summaryA.latest(t), summaryA.raw, summaryA.findings
	recB, rawB, findB := summaryB.latest(t), summaryB.raw, summaryB.findings
	records := slices.Concat(recA, recB)
	sent := regenerate(t, twoTierSeed, twoTierCount, agentsimBurstInterval, truth)
	backA, backB := backendTraces(a.backend), backendTraces(b.backend)
	var remapped int
	t.Run("summary files", func(t *testing.T) {
		checkSummaries(t, truth, records, slices.Concat(rawA, rawB))
		checkRecordsWhereRouted(t, route, map[string][]stormrecord.Record{"a": recA, "b": recB})
		t.Logf("records: a %d, b %d", len(recA), len(recB))
	})
	t.Run("finding records", func(t *testing.T) {
		checkFindingRecords(t, truth, slices.Concat(findA, findB), sent)
		for name, found := range map[string][]stormrecord.FindingRecord{"a": findA, "b": findB} {
			for _, r := range found {
				if got := tier2Instance(route.process(r.TraceID)); got != name {
					t.Errorf("finding record %s (trace %s) is in %s's summary file, but the trace went to %q", r.ID, r.TraceID, name, got)
				}
			}
		}
		inSingle := map[string]bool{}
		for _, r := range readSummaryFileMust(t, single.cfg.SummaryPath).findings {
			inSingle[r.ID] = true
		}
		for _, r := range slices.Concat(findA, findB) {
			if !inSingle[r.ID] {
				t.Errorf("finding record %s written by the two tiers, not by the single collector", r.ID)
			}
			delete(inSingle, r.ID)
		}
		for id := range inSingle {
			t.Errorf("finding record %s written by the single collector, not by the two tiers", id)
		}
	})
	t.Run("records at one logs backend", func(t *testing.T) {
		checkRecordsOnce(t, logRecords(t, logs), summaryA, summaryB)
	})
	t.Run("backends", func(t *testing.T) {
		merged := map[string]*backendTrace{}
		for _, part := range []struct {
			name   string
			traces map[string]*backendTrace
		}{{"a", backA}, {"b", backB}} {
			for id, bt := range part.traces {
				if _, twice := merged[id]; twice {
					t.Errorf("trace %s reached both tier-2 backends", id)
				}
				if got := route.process(id); got != part.name {
					t.Errorf("trace %s reached backend %s but its spans went to tier-2 collector %q", id, part.name, got)
				}
				merged[id] = bt
			}
		}
		remapped = checkBackend(t, truth, want, sent, merged, th)
		t.Logf("kept traces: a %d, b %d", len(backA), len(backB))
	})
	t.Run("metrics", func(t *testing.T) { checkMetrics(t, slices.Concat(mA, mB), want, remapped) })
	t.Run("same as one collector", func(t *testing.T) {
		checkSameAsSingle(t, truth, moved, backendTraces(single.backend), backA, backB, records, single.cfg.SummaryPath)
	})
}

// checkTwoTierRouting: every span agentsim sent reached a tier-2 collector, every trace
// reached exactly one, and both got a share.
func checkTwoTierRouting(t *testing.T, truth []agenttraffic.Truth, route tierRouting, total int) {
	if route.spans != total {
		t.Errorf("the tier-2 collectors received %d distinct spans, agentsim sent %d", route.spans, total)
	}
	perInstance := map[string]int{}
	for _, tr := range truth {
		where := route.byTrace[tr.TraceID]
		tap := route.process(tr.TraceID)
		switch {
		case tap == "":
			t.Errorf("trace %s (%s): spans went to %v, want all of them to one tier-2 collector", tr.TraceID, tr.Scenario, where)
		case where[tap] != tr.Spans:
			t.Errorf("trace %s (%s): %s received %d of its %d spans", tr.TraceID, tr.Scenario, tap, where[tap], tr.Spans)
		default:
			perInstance[tap]++
		}
	}
	for _, name := range []string{"a", "b"} {
		if perInstance[name] == 0 {
			t.Errorf("tier-2 collector %s received no trace: load_balancing did not spread the load", name)
		}
	}
	t.Logf("routing: %d traces, %v per tier-2 collector, none split", len(truth), perInstance)
}

// withoutCrossInstanceStaleCache returns the truth as the two tiers can see it: the
// stale_cache_suspect memory is per collector process, so a stale_cache trace whose warm-up
// trace was analysed by another process (process returns the process that received every
// span of a trace) has no stale_cache_suspect finding. The returned set holds those stale
// traces. The finding is the only difference: such a trace is kept and reported for its
// storm either way.
func withoutCrossInstanceStaleCache(t *testing.T, truth []agenttraffic.Truth, process func(string) string) ([]agenttraffic.Truth, map[string]bool) {
	moved := map[string]bool{}
	same := 0
	for _, warm := range truth {
		if warm.WarmFor == "" {
			continue
		}
		if p := process(warm.TraceID); p != "" && p == process(warm.WarmFor) {
			same++
			continue
		}
		moved[warm.WarmFor] = true
	}
	out := slices.Clone(truth)
	for i := range out {
		if !moved[out[i].TraceID] {
			continue
		}
		out[i].Findings = withoutFindingKind(out[i].Findings, agenttraffic.FindingStaleCacheSuspect)
		out[i].Records = slices.Clone(out[i].Records)
		for j := range out[i].Records {
			out[i].Records[j].Findings = withoutFindingKind(out[i].Records[j].Findings, agenttraffic.FindingStaleCacheSuspect)
		}
	}
	t.Logf("stale_cache pairs: %d analysed by one collector process, %d by two (no stale_cache_suspect expected)", same, len(moved))
	return out, moved
}

func withoutFindingKind(findings []agenttraffic.FindingKind, kind agenttraffic.FindingKind) []agenttraffic.FindingKind {
	return slices.DeleteFunc(slices.Clone(findings), func(f agenttraffic.FindingKind) bool { return f == kind })
}

// checkRecordsWhereRouted: each record is in the summary file of the collector that
// received its trace.
func checkRecordsWhereRouted(t *testing.T, route tierRouting, byInstance map[string][]stormrecord.Record) {
	t.Helper()
	for name, records := range byInstance {
		for _, r := range records {
			if got := tier2Instance(route.process(r.TraceID)); got != name {
				t.Errorf("record %s (trace %s) is in %s's summary file, but the trace went to %q", r.ID, r.TraceID, name, got)
			}
		}
	}
}

// checkSameAsSingle: the two tiers keep exactly the traces the single collector keeps
// (the clean ones included: consistent decisions) and write the same records, but for the
// stale_cache_suspect findings of the stale traces in moved.
func checkSameAsSingle(t *testing.T, truth []agenttraffic.Truth, moved map[string]bool, single, backA, backB map[string]*backendTrace,
	records []stormrecord.Record, singleSummaries string) {
	clean := map[string]bool{}
	for _, tr := range truth {
		clean[tr.TraceID] = tr.Reason == agenttraffic.ReasonClean
	}
	keptTiers := map[string]bool{}
	for id := range backA {
		keptTiers[id] = true
	}
	for id := range backB {
		keptTiers[id] = true
	}
	keptSingle := map[string]bool{}
	for id := range single {
		keptSingle[id] = true
	}
	cleanTiers := maps.Clone(keptTiers)
	maps.DeleteFunc(cleanTiers, func(id string, _ bool) bool { return !clean[id] })
	cleanSingle := maps.Clone(keptSingle)
	maps.DeleteFunc(cleanSingle, func(id string, _ bool) bool { return !clean[id] })
	for _, d := range twoTierSetDiff(keptTiers, keptSingle) {
		t.Errorf("trace %s (clean: %v): kept by the two tiers %s", d.id, clean[d.id], d.side("not by the single collector", "but not by the two tiers; the single collector keeps it"))
	}
	t.Logf("kept: two tiers %d traces (%d clean), single collector %d (%d clean)",
		len(keptTiers), len(cleanTiers), len(keptSingle), len(cleanSingle))

	singleRecords := readSummaryFileMust(t, singleSummaries).latest(t)
	tiers := encodedRecordsByID(t, records, nil)
	one := encodedRecordsByID(t, singleRecords, moved)
	for _, d := range twoTierSetDiff(twoTierKeys(tiers), twoTierKeys(one)) {
		t.Errorf("record %s: %s", d.id, d.side("written by the two tiers, not by the single collector", "written by the single collector, not by the two tiers"))
	}
	for id, got := range tiers {
		if w, ok := one[id]; ok && got != w {
			t.Errorf("record %s differs:\n  two tiers: %s\n  single:    %s", id, got, w)
		}
	}
	t.Logf("records: two tiers %d, single collector %d", len(tiers), len(one))
}

// encodedRecordsByID encodes each record as JSON, by id, without its revision; for traces
// in strip, without the stale_cache_suspect findings. The revision says when a finding was
// found (at the decision, or later, when the trace a stale read copied was decided after
// it), which depends on the order the traces were decided in, not on what was found.
func encodedRecordsByID(t *testing.T, records []stormrecord.Record, strip map[string]bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range records {
		r.Revision = 0
		if strip[r.TraceID] {
			r.Findings = slices.DeleteFunc(slices.Clone(r.Findings), func(f stormrecord.Finding) bool {
				return f.Kind == string(agenttraffic.FindingStaleCacheSuspect)
			})
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("encode record %s: %v", r.ID, err)
		}
		out[r.ID] = string(b)
	}
	return out
}

func twoTierKeys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// twoTierSetSide is an element of one set and not the other.
type twoTierSetSide struct {
	id     string
	inLeft bool
}

func (d twoTierSetSide) side(leftOnly, rightOnly string) string {
	if d.inLeft {
		return leftOnly
	}
	return rightOnly
}

func twoTierSetDiff(left, right map[string]bool) []twoTierSetSide {
	var out []twoTierSetSide
	for _, id := range slices.Sorted(maps.Keys(left)) {
		if !right[id] {
			out = append(out, twoTierSetSide{id, true})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(right)) {
		if !left[id] {
			out = append(out, twoTierSetSide{id, false})
		}
	}
	return out
}
