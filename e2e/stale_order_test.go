//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// The traffic of the stale-cache order test: two agentsim processes at once, each sending
// stale_cache draws of four pairs interleaved (at least one stale read of each draw before
// the trace it copied) among clean traffic, as fast as the collector takes them.
const (
	staleOrderCount = 60
	staleOrderPairs = 4
)

// TestStaleCacheSuspectAnyOrder: every injected stale read is found, whichever of it and the
// trace it copied is decided first and on whichever shards, with the default shards and
// with 8, under two concurrent senders. A stale read decided before its original gets the
// finding on a later revision of its call's record, sent on a retrystorm.late_finding span:
// the file read as a reader reads it (the most complete line per id) holds every expected
// record, and the metrics count every finding once.
func TestStaleCacheSuspectAnyOrder(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	for _, shards := range []int{0, 8} {
		t.Run(fmt.Sprintf("num_shards %d", shards), func(t *testing.T) {
			dir := t.TempDir()
			cfg := pipelineConfig(t, dir, 0, shards)
			cfg.SummaryPath = filepath.Join(dir, "storms.jsonl")
			sink := startBackend(t, cfg.BackendPort)
			collector := startStormCollector(t, dir, cfg)

			var runs []*agentsimRun
			var truthPaths []string
			for i, seed := range []int{31, 32} {
				path := filepath.Join(dir, fmt.Sprintf("truth-%d.jsonl", i))
				truthPaths = append(truthPaths, path)
				runs = append(runs, startAgentsim(t, agentsim, "--endpoint", loopback(cfg.OTLPPort),
					"--rate", "0", "--count", strconv.Itoa(staleOrderCount), "--seed", strconv.Itoa(seed),
					"--scenarios", "clean=2,stale_cache=1", "--stale-pairs", strconv.Itoa(staleOrderPairs),
					"--service", agentService, "--truth", path))
			}
			for _, r := range runs {
				r.wait(t)
			}
			var truth []agenttraffic.Truth
			for _, path := range truthPaths {
				truth = append(truth, readTruth(t, path)...)
			}
			spans, stale := 0, 0
			for _, tr := range truth {
				spans += tr.Spans
				if tr.Scenario == agenttraffic.ScenarioStaleCache {
					stale++
				}
			}
			m := waitSettled(t, collector, cfg.MetricsPort, spans)
			collector.stop(t)

			summary := readSummaryFileMust(t, cfg.SummaryPath)
			checkSummaries(t, truth, summary.latest(t), summary.raw)
			found := int(m.sum(metricFindings, map[string]string{"kind": "stale_cache_suspect"}))
			if found != stale {
				t.Errorf("findings{kind=stale_cache_suspect} = %d, want %d: one per injected stale read", found, stale)
			}
			late := int(m.sum(metricLateFindings, map[string]string{"outcome": "forwarded"}))
			if missed := m.sum(metricLateFindings, map[string]string{"outcome": "trace_dropped"}); missed != 0 {
				t.Errorf("late_findings{outcome=trace_dropped} = %v: a stale read's trace was dropped", missed)
			}
			backend := backendTraces(sink)
			lateSpans := 0
			for _, bt := range backend {
				lateSpans += len(bt.late)
			}
			if lateSpans != late {
				t.Errorf("the backend received %d late-finding spans, late_findings{outcome=forwarded} = %d", lateSpans, late)
			}
			t.Logf("%d traces (%d stale reads) from 2 senders: %d stale reads found at their decision, %d after it (late-finding spans)",
				len(truth), stale, found-late, late)
		})
	}
}
