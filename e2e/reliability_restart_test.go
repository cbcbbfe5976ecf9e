//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// TestReliabilitySIGTERMDecidesBuffered runs the pipeline test's agentsim traffic into a
// collector whose decisions are two minutes away, so every trace is still buffered when
// SIGTERM arrives. Shutdown must decide them all and write every storm record and every kept
// trace before the process exits.
func TestReliabilitySIGTERMDecidesBuffered(t *testing.T) {
	dir := t.TempDir()
	agentsim := buildAgentsim(t, dir)
	cfg := newStormConfig(t, dir)
	cfg.DecisionWait, cfg.RootGrace = "2m", "2m"
	cfg.NumShards = 0 // the default; stale_cache_suspect does not depend on the order shards decide in
	cfg.CleanPercent = cleanPercent
	sink := startBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg)

	truthPath := filepath.Join(dir, "truth.jsonl")
	runAgentsim(t, agentsim, "--endpoint", loopback(cfg.OTLPPort), "--rate", "0",
		"--count", strconv.Itoa(agentCount), "--every-scenario", "--seed", strconv.Itoa(agentSeed),
		"--service", agentService, "--truth", truthPath)
	truth := readTruth(t, truthPath)
	th := cleanThreshold(t, cleanPercent)
	want := expect(t, truth, th)

	m := waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "every span received and buffered", func(m metrics) bool {
		return int(m.sum(metricSpansReceived, nil)) == want.spans && int(m.sum(metricBufferedTraces, nil)) == len(truth)
	})
	if decided := m.sum(metricTraces, nil); decided != 0 {
		t.Fatalf("%v traces decided before SIGTERM; the test needs them all buffered", decided)
	}
	if _, err := os.Stat(cfg.SummaryPath); err == nil {
		if raw, _ := os.ReadFile(cfg.SummaryPath); len(raw) > 0 {
			t.Fatalf("storm records written before SIGTERM")
		}
	}
	bufferedBytes := m.sum(metricPrefix+"buffered_bytes", nil)
	start := time.Now()
	p.stop(t)
	t.Logf("SIGTERM with %d traces (%d spans, %.1f MiB) buffered: exited cleanly after %s",
		len(truth), want.spans, bufferedBytes/(1<<20), time.Since(start).Round(time.Millisecond))

	summary := readSummaryFileMust(t, cfg.SummaryPath)
	records, raw := summary.latest(t), summary.raw
	sent := regenerate(t, agentSeed, agentCount, agentsimBurstInterval, truth)
	t.Run("summary file", func(t *testing.T) { checkSummaries(t, truth, records, raw) })
	t.Run("backend", func(t *testing.T) {
		checkBackend(t, truth, want, sent, backendTraces(sink), th)
		_, perSpan := spanCounts(sink)
		for key, n := range perSpan {
			if n > 1 {
				t.Errorf("span %s of trace %s reached the backend %d times", key[1], key[0], n)
			}
		}
	})
}

// TestReliabilitySIGKILLWithPersistentQueue: storm_summary has a persistent sending queue
// (file_storage). Records are written, then the summary filesystem fills up, so the next
// records wait in the queue, retried; the collector is killed with SIGKILL. After the disk
// is freed and the collector restarted, every record is in the file exactly once: the
// queue replays what was waiting, and what was appended before the kill is not appended
// again, also when the same traces are sent a second time.
func TestReliabilitySIGKILLWithPersistentQueue(t *testing.T) {
	dir := t.TempDir()
	const tmpfsKB = 512
	mnt := mountTmpfs(t, dir, tmpfsKB)
	cfg := newStormConfig(t, dir)
	cfg.NoBackend = true
	cfg.NumShards = 1
	cfg.DecisionWait, cfg.RootGrace = "3s", "200ms"
	cfg.SummaryPath = filepath.Join(mnt, "storms.jsonl")
	queueDir := filepath.Join(dir, "queue")
	cfg.Extensions = yamlMap{"file_storage": yamlMap{"directory": queueDir, "create_directory": true}}
	cfg.Summary = retryFast()
	cfg.Summary["sending_queue"] = yamlMap{"enabled": true, "storage": "file_storage", "num_consumers": 2}

	weights := signalHeavy()
	before := generate(t, agenttraffic.Config{Seed: 31, Scenarios: weights}, 30)
	queued := generate(t, agenttraffic.Config{Seed: 32, Scenarios: weights}, 30)
	wantBefore, wantQueued := countRecords(truthOf(before)), countRecords(truthOf(queued))

	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)
	spansBefore, _ := sendWhole(t, client, before, 5)
	waitMetrics(t, p, cfg.MetricsPort, settleTimeout, fmt.Sprintf("%d records written", wantBefore), func(m metrics) bool {
		return int(m.sum(metricRecordsWritten, nil)) == wantBefore
	})
	if missing := missingRecords(truthOf(before), readSummaryFile(t, cfg.SummaryPath)); len(missing) > 0 {
		t.Fatalf("records missing before the fault: %v", missing)
	}

	filler := fillFilesystem(t, mnt)
	spansQueued, _ := sendWhole(t, client, queued, 5)
	m := waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "queued traces decided and their appends failing and retried", func(m metrics) bool {
		return settledAt(m, spansBefore+spansQueued) && m.sum(metricWriteErrors, nil) >= 3
	})
	if got := int(m.sum(metricRecordsWritten, nil)); got != wantBefore {
		t.Fatalf("%d records written on a full filesystem, want %d (those before the fault)", got, wantBefore)
	}
	t.Logf("disk full: %v append errors so far, %v requests in the persistent queue; SIGKILL",
		m.sum(metricWriteErrors, nil), m.sum(metricQueueSize, map[string]string{"exporter": "storm_summary"}))
	p.kill(t)
	if f := readSummaryFile(t, cfg.SummaryPath); f.count() != wantBefore {
		t.Fatalf("after SIGKILL the file holds %d records, want %d", f.count(), wantBefore)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatalf("free the filesystem: %v", err)
	}
	start := time.Now()
	p = startStormCollector(t, dir, cfg)
	all := append(truthOf(before), truthOf(queued)...)
	m = waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "the queued records replayed", func(m metrics) bool {
		return int(m.sum(metricRecordsWritten, nil)) >= wantQueued
	})
	t.Logf("restart: %v records replayed from the persistent queue in %s", m.sum(metricRecordsWritten, nil), time.Since(start).Round(time.Millisecond))
	t.Run("replayed once", func(t *testing.T) {
		f := readSummaryFile(t, cfg.SummaryPath)
		if d := f.duplicates(); len(d) > 0 {
			t.Errorf("records written twice: %v", d)
		}
		checkSummaries(t, all, f.records, f.raw)
		checkFindingRecords(t, all, f.findings, nil)
	})

	// An upstream retry after the restart sends the first traces again: their records are
	// already in the file (the exporter preloaded its id memory from the file's tail).
	client = dialOTLP(t, cfg.OTLPPort)
	spansAgain, _ := sendWhole(t, client, before, 5)
	m = waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "the re-sent traces decided and deduplicated", func(m metrics) bool {
		return settledAt(m, spansAgain) &&
			int(m.sum(metricRecordsDedup, nil)) == wantBefore
	})
	t.Run("re-sent traces not written again", func(t *testing.T) {
		f := readSummaryFile(t, cfg.SummaryPath)
		if d := f.duplicates(); len(d) > 0 {
			t.Errorf("records written twice: %v", d)
		}
		checkSummaries(t, all, f.records, f.raw)
		checkFindingRecords(t, all, f.findings, nil)
		t.Logf("%d records in the file; %v deduplicated on re-send", f.count(), m.sum(metricRecordsDedup, nil))
	})
	p.stop(t)
}

// signalHeavy weighs every signal scenario but stale_cache like clean traffic, so a few
// dozen traces hold many storm records.
func signalHeavy() agenttraffic.ScenarioWeights {
	w := agenttraffic.ScenarioWeights{}
	for sc := range withoutStaleCache() {
		w[sc] = 1
	}
	w[agenttraffic.ScenarioClean] = 2
	return w
}

// countRecords is the number of summary records the truth implies: the storm records and
// one finding record per trace with an unbacked citation.
func countRecords(truth []agenttraffic.Truth) int {
	n := 0
	for i := range truth {
		n += len(truth[i].Records)
		if unbackedCitations(&truth[i]) > 0 {
			n++
		}
	}
	return n
}
