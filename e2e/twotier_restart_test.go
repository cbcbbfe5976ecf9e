//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// The traffic of the restart test: paced, so that agentsim is still sending when tier-2
// collector b restarts (about 4 s of traffic; b restarts about 1 s in). At 100 traces/s
// agentsim's 512-span export batches end inside traces, so a trace of b's can be cut by the
// restart (one in most runs).
const (
	restartSeed  = 5
	restartCount = 400
	restartRate  = 100
	// restartAfterSpans is how many spans b receives before it is restarted: about a sixth
	// of its share.
	restartAfterSpans = 2000
)

// TestTwoTierRestart restarts tier-2 collector b (SIGTERM, then a new process on the same
// port and summary file) while agentsim sends into tier 1. Tier 1's load_balancing keeps
// routing b's trace ids to b (a static resolver does not change the ring) and queues and
// retries them while b is down, so no span is lost and none goes to a.
//
// What the restart costs is confined to the traces b's first process had received part of
// when it stopped ("split" traces): the first process decides its part at shutdown, the
// second process receives the rest as a new trace and decides it on its own. For every
// other trace the test holds the output to the truth exactly as in the two-tier test: each
// expected record once, in the file of the collector that received the trace, the kept
// traces whole at the backends, no raw payload in the lines of their records. For split
// traces (and a stale_cache trace whose warm-up trace was split) it logs what was written
// and kept; TestTier2RestartSplitsATraceInFlight pins the loss down, and README.md
// ("Scaling out": "Restarting a tier-2 instance…") states it. The split traces' lines are
// searched for raw payloads on their own: a part's record may quote a value of its own
// trace that only the other part showed to be a payload (logged), but no value the trace
// never sent (an error).
func TestTwoTierRestart(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	a := startTier2(t, dir, "a", true)
	b := startTier2(t, dir, "b", true)
	tier1, tier1Port, tier1Metrics := startTier1(t, dir, 0, a, b)

	truthPath := filepath.Join(dir, "truth.jsonl")
	run := startAgentsim(t, agentsim, "--endpoint", loopback(tier1Port),
		"--rate", strconv.Itoa(restartRate), "--count", strconv.Itoa(restartCount), "--every-scenario",
		"--seed", strconv.Itoa(restartSeed), "--service", agentService, "--truth", truthPath)
	eventually(t, agentsimTimeout, "b receives traffic", func() (bool, string) {
		aliveAll(t, tier1, a.proc, b.proc)
		_, got, status := b.settled()
		return got >= restartAfterSpans, status
	})
	down := b.restart(t)
	t.Logf("b restarted: its OTLP port was closed for %s", down.Round(time.Millisecond))
	run.wait(t)
	truth := readTruth(t, truthPath)
	total := 0
	for _, tr := range truth {
		total += tr.Spans
	}

	procs := []*collectorProcess{tier1, a.proc, b.proc}
	eventually(t, settleTimeout, "every span reached tier 2 and was decided", func() (bool, string) {
		aliveAll(t, procs...)
		m, err := scrape(tier1Metrics)
		if err != nil {
			return false, err.Error()
		}
		lb := int(m.sum("otelcol_exporter_sent_spans", map[string]string{"exporter": "load_balancing"}))
		okA, _, stA := a.settled()
		okB, _, stB := b.settled()
		tapped := tapRouting(a, b).spans
		status := fmt.Sprintf("tier 1 sent %d of %d; taps saw %d; %s; %s (second process)", lb, total, tapped, stA, stB)
		return lb == total && tapped == total && okA && okB, status
	})
	for _, p := range procs {
		p.stop(t)
	}

	route := tapRouting(a, b)
	cut := checkRestartRouting(t, truth, route, total)
	// A stale trace whose warm-up trace was split may or may not find the warm-up's result
	// in the second process's memory, depending on which part held the read: it counts as
	// affected by the restart too, though its own spans went to one process.
	split := maps.Clone(cut)
	for _, tr := range truth {
		if tr.WarmFor != "" && split[tr.TraceID] {
			split[tr.WarmFor] = true
		}
	}
	truth, _ = withoutCrossInstanceStaleCache(t, truth, route.process)
	whole := slices.DeleteFunc(slices.Clone(truth), func(tr agenttraffic.Truth) bool { return split[tr.TraceID] })
	summaryA, summaryB := readSummaryFileMust(t, a.cfg.SummaryPath), readSummaryFileMust(t, b.cfg.SummaryPath)
	recA, recB := summaryA.latest(t), summaryB.latest(t)
	isSplit := func(r stormrecord.Record) bool { return split[r.TraceID] }
	sent := regenerate(t, restartSeed, restartCount, time.Second/restartRate, truth)
	backA, backB := backendTraces(a.backend), backendTraces(b.backend)

	t.Run("whole traces: summary files", func(t *testing.T) {
		wholeA := slices.DeleteFunc(slices.Clone(recA), isSplit)
		wholeB := slices.DeleteFunc(slices.Clone(recB), isSplit)
		// The lines of every trace one process decided whole: those of the split traces are
		// searched below, against what each of them sent.
		uncut := func(id string) bool { return !cut[id] }
		checkSummaries(t, whole, slices.Concat(wholeA, wholeB), slices.Concat(summaryA.linesOf(uncut), summaryB.linesOf(uncut)))
		checkRecordsWhereRouted(t, route, map[string][]stormrecord.Record{"a": wholeA, "b": wholeB})
	})
	t.Run("split traces: summary files", func(t *testing.T) {
		checkSplitTraceLines(t, truth, cut, sent, summaryA, summaryB)
	})
	t.Run("whole traces: backends", func(t *testing.T) {
		merged := map[string]*backendTrace{}
		for id, bt := range backA {
			merged[id] = bt
		}
		for id, bt := range backB {
			if _, twice := merged[id]; twice {
				t.Errorf("trace %s reached both tier-2 backends", id)
			}
			merged[id] = bt
		}
		maps.DeleteFunc(merged, func(id string, _ *backendTrace) bool { return split[id] })
		th := cleanThreshold(t, cleanPercent)
		checkBackend(t, whole, expect(t, whole, th), sent, merged, th)
	})
	t.Run("summary file of b across the restart", func(t *testing.T) {
		ids := map[string]bool{}
		for _, r := range recB {
			if ids[r.ID] {
				t.Errorf("record %s (trace %s) written twice to b's summary file across its restart", r.ID, r.TraceID)
			}
			ids[r.ID] = true
		}
	})
	reportSplitTraces(t, truth, split, route, recB, backB)
}

// checkRestartRouting: every span agentsim sent reached tier 2, every trace reached one
// tier-2 collector (b's two processes count as one collector), and b's second process
// received traffic, so the restart happened mid-run. It returns the split traces: those
// whose spans reached both of b's processes.
func checkRestartRouting(t *testing.T, truth []agenttraffic.Truth, route tierRouting, total int) map[string]bool {
	t.Helper()
	if route.spans != total {
		t.Errorf("the tier-2 collectors received %d distinct spans, agentsim sent %d", route.spans, total)
	}
	split := map[string]bool{}
	perTap := map[string]int{}
	for _, tr := range truth {
		where := route.byTrace[tr.TraceID]
		instances := map[string]bool{}
		for tap, n := range where {
			instances[tier2Instance(tap)] = true
			perTap[tap] += n
		}
		switch {
		case len(instances) != 1:
			t.Errorf("trace %s (%s): spans went to %v, want all of them to one tier-2 collector", tr.TraceID, tr.Scenario, where)
		case len(where) > 1:
			split[tr.TraceID] = true
		}
	}
	if perTap["b#1"] == 0 || perTap["b#2"] == 0 {
		t.Fatalf("spans per collector process %v: b was not restarted while it received traffic", perTap)
	}
	t.Logf("routing: spans per collector process %v; %d traces of b reached both of its processes", perTap, len(split))
	return split
}

// checkSplitTraceLines searches the summary lines of each split trace (decided in two
// parts, each alone) for the raw payload values of every trace sent. A part decided alone
// can quote in its record a value of its own trace that only the other part showed to be a
// payload: the asset an answer in the second part cites, which the first part's tool span
// took as an argument (README.md, "Scaling out"). Such a hit is logged as the restart's
// cost; a value the split trace never sent is another trace's payload in its record, and
// fails.
func checkSplitTraceLines(t *testing.T, truth []agenttraffic.Truth, cut map[string]bool,
	sent map[string]*agenttraffic.Trace, files ...summaryFile) {
	t.Helper()
	for _, id := range slices.Sorted(maps.Keys(cut)) {
		var lines []byte
		for _, f := range files {
			lines = append(lines, f.linesOf(func(traceID string) bool { return traceID == id })...)
		}
		// A value another trace sent as a payload, which the split trace sent too: by the
		// other traces that sent it.
		shared := map[string][]string{}
		for _, hit := range findSecrets(truth, lines) {
			switch {
			case hit.tr.TraceID == id:
				t.Logf("split trace %s (%s): its summary records hold its raw payload %q: "+
					"the part that wrote them did not hold the span that made it a payload", id, hit.tr.Scenario, hit.secret)
			case traceSends(sent[id], hit.secret):
				shared[hit.secret] = append(shared[hit.secret], hit.tr.TraceID)
			default:
				t.Errorf("split trace %s: its summary records hold %q, a raw payload of trace %s (%s) that it never sent",
					id, hit.secret, hit.tr.TraceID, hit.tr.Scenario)
			}
		}
		for _, value := range slices.Sorted(maps.Keys(shared)) {
			t.Logf("split trace %s: its summary records hold %q, which it sent itself and %d other traces sent as a payload %v: "+
				"if it was one in this trace, the part that wrote them did not hold the span that made it one",
				id, value, len(shared[value]), shared[value])
		}
	}
}

// traceSends reports whether any span of tr (its name, status, attributes, events or
// links) carries v.
func traceSends(tr *agenttraffic.Trace, v string) bool {
	if tr == nil {
		return false
	}
	for _, span := range tracespans.All(agenttraffic.TraceToPdata(tr)) {
		for _, l := range spanLocated(span) {
			if strings.Contains(l.text, v) {
				return true
			}
		}
	}
	return false
}

// reportSplitTraces logs, for each trace affected by the restart (split, or a stale trace
// whose warm-up trace was split), what its ground truth expects and what was written and
// kept: the cost of the restart.
func reportSplitTraces(t *testing.T, truth []agenttraffic.Truth, split map[string]bool, route tierRouting,
	records []stormrecord.Record, backend map[string]*backendTrace) {
	t.Helper()
	byTrace := map[string][]stormrecord.Record{}
	for _, r := range records {
		byTrace[r.TraceID] = append(byTrace[r.TraceID], r)
	}
	for _, tr := range truth {
		if !split[tr.TraceID] {
			continue
		}
		var lines []string
		for _, want := range tr.Records {
			lines = append(lines, fmt.Sprintf("expected %s: storm %v, %d attempts %v, findings %v",
				callName(want), want.Storm, want.Attempts, want.Statuses, want.Findings))
		}
		for _, r := range byTrace[tr.TraceID] {
			var kinds []string
			for _, f := range r.Findings {
				kinds = append(kinds, f.Kind)
			}
			lines = append(lines, fmt.Sprintf("written  %s (%s): storm %v, %d attempts %v, findings %v",
				r.CallKey, r.ToolName, r.Storm, r.Attempts, r.Statuses, kinds))
		}
		kept, reasons := 0, []string{}
		if bt := backend[tr.TraceID]; bt != nil {
			kept = len(bt.spans)
			for _, span := range bt.spans {
				if r := strAttr(span, stormrecord.AttrSampling); r != "" {
					reasons = append(reasons, r)
				}
				for i := 0; i < span.Events().Len(); i++ {
					if kind, ok := span.Events().At(i).Attributes().Get("kind"); ok {
						reasons = append(reasons, "finding "+kind.AsString())
					}
				}
			}
		}
		t.Logf("trace affected by the restart %s (%s, %s, reason %s): spans %v; %d of %d spans kept, sampling reasons and findings on the kept spans %v%s",
			tr.TraceID, tr.Scenario, tr.Shape, tr.Reason, route.byTrace[tr.TraceID], kept, tr.Spans, reasons,
			strings.Join(append([]string{""}, lines...), "\n    "))
	}
}
