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

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// The traffic of the pipeline test: a fixed seed, every scenario once, then the realistic
// mix (90% clean).
const (
	agentSeed    = 11
	agentCount   = 150
	agentService = "e2e-agent"
	// cleanPercent is not the default 5 so that enough clean traces are kept for the
	// consistent-sampling check to mean something.
	cleanPercent = 20
	// numShards 0 is the default: one shard per GOMAXPROCS. stale_cache_suspect does not
	// depend on which of a stale read and the trace it copied is decided first, nor on
	// their shards (TestStaleCacheSuspectAnyOrder holds it under load with 8 shards).
	numShards = 0
)

// agentsimBurstInterval is how far apart agentsim plans traces with --rate 0.
const agentsimBurstInterval = 10 * time.Millisecond

// pipelineConfig is the collector of the pipeline tests: decisions 2 s after a trace's last
// span, 200 ms after its root.
func pipelineConfig(t *testing.T, dir string, cleanPercent float64, numShards int) stormConfig {
	t.Helper()
	cfg := newStormConfig(t, dir)
	cfg.DecisionWait, cfg.RootGrace = "2s", "200ms"
	cfg.CleanPercent, cfg.NumShards = cleanPercent, numShards
	cfg.LogLevel = ""
	return cfg
}

// TestPipelineAgainstGroundTruth runs agentsim through the built collector (retry_storm →
// OTLP backend + storm_summary) and holds the summary file, what the backend received and
// the collector's metrics to the ground truth agentsim wrote.
func TestPipelineAgainstGroundTruth(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	cfg := pipelineConfig(t, dir, cleanPercent, numShards)
	sink := startBackend(t, cfg.BackendPort)
	logsPort := freePorts(t, 1)[0]
	logs := startLogsBackend(t, logsPort)
	withSignals(t, &cfg, logsPort)
	collector := startStormCollector(t, dir, cfg)

	truthPath := filepath.Join(dir, "truth.jsonl")
	runAgentsim(t, agentsim, "--endpoint", loopback(cfg.OTLPPort), "--rate", "0",
		"--count", strconv.Itoa(agentCount), "--every-scenario", "--seed", strconv.Itoa(agentSeed),
		"--service", agentService, "--truth", truthPath)
	truth := readTruth(t, truthPath)
	th := cleanThreshold(t, cleanPercent)
	want := expect(t, truth, th)

	m := waitSettled(t, collector, cfg.MetricsPort, want.spans)
	var signals metrics
	eventually(t, settleTimeout, "the storms connector counted every storm and finding", func() (bool, string) {
		got, failed := scrapeWhile(t, collector, cfg.Signals.PrometheusPort)
		if got == nil {
			return false, failed
		}
		signals = got
		return stormSignalsDone(got, want)
	})
	collector.stop(t)

	summary := readSummaryFileMust(t, cfg.SummaryPath)
	records, raw, findingRecords := summary.latest(t), summary.raw, summary.findings
	sent := regenerate(t, agentSeed, agentCount, agentsimBurstInterval, truth)
	backend := backendTraces(sink)
	var remapped int
	t.Run("summary file", func(t *testing.T) { checkSummaries(t, truth, records, raw) })
	t.Run("finding records", func(t *testing.T) { checkFindingRecords(t, truth, findingRecords, sent) })
	t.Run("backend", func(t *testing.T) { remapped = checkBackend(t, truth, want, sent, backend, th) })
	t.Run("metrics", func(t *testing.T) {
		checkMetrics(t, m, want, remapped)
		checkRecordMetrics(t, m, truth, summary)
	})
	t.Run("storm metrics", func(t *testing.T) { checkStormMetrics(t, signals, truth, want, float64(cleanPercent)/100) })
	t.Run("records at the logs backend", func(t *testing.T) { checkRecordsOnce(t, logRecords(t, logs), summary) })
}

// checkRecordMetrics: storm_summary counts the lines it wrote by schema, and the file holds
// one record per record of the truth. A record is written again when a finding about it
// is found after its trace was decided (a stale-cache pair decided in the other order):
// the metric counts that line too.
func checkRecordMetrics(t *testing.T, m metrics, truth []agenttraffic.Truth, summary summaryFile) {
	storms, findings := 0, 0
	for i := range truth {
		storms += len(truth[i].Records)
		if unbackedCitations(&truth[i]) > 0 {
			findings++
		}
	}
	findingIDs := map[string]bool{}
	for _, f := range summary.findings {
		findingIDs[f.ID] = true
	}
	for _, c := range []struct {
		schema         string
		lines, records int
		want           int
	}{
		{stormrecord.Schema, len(summary.records), len(summary.latest(t)), storms},
		{stormrecord.FindingSchema, len(summary.findings), len(findingIDs), findings},
	} {
		if got := int(m.sum(metricRecordsWritten, map[string]string{"schema": c.schema})); got != c.lines {
			t.Errorf("records written (schema %s): metrics say %d, the file has %d lines", c.schema, got, c.lines)
		}
		if c.records != c.want {
			t.Errorf("records (schema %s): the file has %d, truth %d", c.schema, c.records, c.want)
		}
	}
}

// expectation is what the truth implies for the whole run.
type expectation struct {
	spans        int
	kept         map[string]bool // trace ids the backend must receive
	keptSpans    int
	droppedSpans int
	traces       map[[2]string]int // (decision, reason) → traces
	storms       map[[2]string]int // (class, tool) → storm records
	findings     map[string]int
	toolAttempts int
	calls        int
	incomplete   int
}

func expect(t *testing.T, truth []agenttraffic.Truth, th sampling.Threshold) expectation {
	t.Helper()
	e := expectation{kept: map[string]bool{}, traces: map[[2]string]int{}, storms: map[[2]string]int{},
		findings: map[string]int{}}
	scenarios := map[agenttraffic.Scenario]bool{}
	cleanKept, clean := 0, 0
	for _, tr := range truth {
		scenarios[tr.Scenario] = true
		e.spans += tr.Spans
		e.toolAttempts += tr.ToolAttempts
		e.calls += tr.Calls
		keep := tr.Keep
		if tr.Reason == agenttraffic.ReasonClean {
			clean++
			keep = keepsClean(t, th, tr.TraceID)
			if keep {
				cleanKept++
			}
		}
		decision := "dropped"
		if keep {
			decision = "kept"
			e.kept[tr.TraceID] = true
			e.keptSpans += tr.Spans
		} else {
			e.droppedSpans += tr.Spans
		}
		e.traces[[2]string{decision, string(tr.Reason)}]++
		for _, f := range tr.Findings {
			e.findings[string(f)]++
		}
		for _, rec := range tr.Records {
			e.incomplete += rec.IncompleteAttempts
			if rec.Storm {
				e.storms[[2]string{string(rec.Class), rec.Tool}]++
			}
		}
	}
	for _, sc := range agenttraffic.AllScenarios() {
		if !scenarios[sc] {
			t.Fatalf("agentsim sent no %s trace despite --every-scenario", sc)
		}
	}
	if cleanKept == 0 || cleanKept == clean {
		t.Fatalf("%d of %d clean traces pass %v%%: pick a seed that keeps some and drops some", cleanKept, clean, cleanPercent)
	}
	t.Logf("truth: %d traces, %d spans; %d signal traces, %d of %d clean traces expected kept at %v%%",
		len(truth), e.spans, len(e.kept)-cleanKept, cleanKept, clean, cleanPercent)
	return e
}

func checkMetrics(t *testing.T, m metrics, want expectation, remapped int) {
	counts := []struct {
		name      string
		got, want int
	}{
		{"spans received", int(m.sum(metricSpansReceived, nil)), want.spans},
		{"spans forwarded", int(m.sum(metricSpansForwarded, nil)), want.keptSpans},
		{"spans dropped (sampled out)", int(m.sum(metricSpansDropped, map[string]string{"cause": "sampled_out"})), want.droppedSpans},
		{"spans dropped (all causes)", int(m.sum(metricSpansDropped, nil)), want.droppedSpans},
		{"tool attempts", int(m.sum(metricToolAttempts, nil)), want.toolAttempts},
		{"logical calls", int(m.sum(metricCalls, nil)), want.calls},
		{"incomplete attempts", int(m.sum(metricIncomplete, nil)), want.incomplete},
		{"status remapped (as seen by the backend)", int(m.sum(metricStatusRemapped, nil)), remapped},
		// Every trace arrives whole before its root and is decided at root + root_grace:
		// no span may come late and nothing is decided early.
		{"late spans", int(m.sum(metricLateSpans, nil)), 0},
		{"early decisions", int(m.sum(metricEarlyDecisions, nil)), 0},
	}
	for _, c := range counts {
		if c.got != c.want {
			t.Errorf("%s: metrics say %d, truth %d", c.name, c.got, c.want)
		}
	}
	equalCounts(t, "traces by (decision, reason)", m.byPair(metricTraces, "decision", "reason"), want.traces)
	equalCounts(t, "storm calls by (class, tool)", m.byPair(metricStormCalls, "class", "tool"), want.storms)
	equalCounts(t, "findings by kind", m.by(metricFindings, "kind"), want.findings)
}

// equalCounts compares two tallies, ignoring zero entries.
func equalCounts[K comparable](t *testing.T, what string, got, want map[K]int) {
	t.Helper()
	maps.DeleteFunc(got, func(_ K, v int) bool { return v == 0 })
	maps.DeleteFunc(want, func(_ K, v int) bool { return v == 0 })
	if maps.Equal(got, want) {
		return
	}
	keys := map[K]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	var diffs []string
	for k := range keys {
		if got[k] != want[k] {
			diffs = append(diffs, fmt.Sprintf("%v: metrics %d, truth %d", k, got[k], want[k]))
		}
	}
	slices.Sort(diffs)
	t.Errorf("%s differ:\n  %s", what, strings.Join(diffs, "\n  "))
}
