//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// TestReliabilitySummaryUnwritableAtStart: a summary path that cannot be created stops the
// collector at start with an error naming the path, instead of running without records.
func TestReliabilitySummaryUnwritableAtStart(t *testing.T) {
	dir := t.TempDir()
	notADir := filepath.Join(dir, "not-a-directory")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A link at the path in a directory others can write to: following it would let anyone
	// there choose the file whose mode is changed, whose last line is cut and appended to.
	shared := filepath.Join(dir, "shared")
	victim := filepath.Join(dir, "victim.txt")
	const victimContent = "not the exporter's\npartial"
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte(victimContent), 0o644); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(shared, "storms.jsonl")
	dangling := filepath.Join(shared, "dangling.jsonl")
	if err := os.Symlink(victim, linked); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "missing.jsonl"), dangling); err != nil {
		t.Fatal(err)
	}
	mnt := mountTmpfs(t, dir, 64)
	remountTmpfs(t, mnt, true, 64)
	for name, path := range map[string]string{
		"parent is a file":         filepath.Join(notADir, "storms.jsonl"),
		"read-only filesystem":     filepath.Join(mnt, "storms.jsonl"),
		"read-only, new directory": filepath.Join(mnt, "storms", "storms.jsonl"),
		"symlink to another file":  linked,
		"dangling symlink":         dangling,
	} {
		t.Run(name, func(t *testing.T) {
			cfg := newStormConfig(t, dir)
			cfg.NoBackend = true
			cfg.SummaryPath = path
			logPath := filepath.Join(t.TempDir(), "collector.log")
			config := cfg.collector().write(t, filepath.Join(t.TempDir(), "collector.yaml"))
			p := startCollector(t, config, logPath)
			if !p.waitExit(readyTimeout) {
				t.Fatalf("collector still running %s with an unwritable summary path %s", readyTimeout, path)
			}
			if p.waitErr == nil {
				t.Fatalf("collector exited 0 with an unwritable summary path")
			}
			log := p.log()
			if !strings.Contains(log, "storm_summary") || !strings.Contains(log, filepath.Dir(path)) && !strings.Contains(log, path) {
				t.Errorf("the start error names neither storm_summary nor the path %s:\n%s", path, tail(log, 5))
			}
			t.Logf("exit %v: %s", p.waitErr, lastErrorLine(log))
		})
	}
	content, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	if string(content) != victimContent {
		t.Errorf("the symlink's target was written: %q", content)
	}
	if info, err := os.Stat(victim); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("the symlink's target changed mode: %v %v", info.Mode(), err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Errorf("the dangling symlink's target was created")
	}
}

// lastErrorLine is the collector's final "Error:" line.
func lastErrorLine(log string) string {
	line := ""
	for l := range strings.Lines(log) {
		if i := strings.Index(l, "Error:"); i >= 0 {
			line = strings.TrimSpace(l[i:])
		}
	}
	return line
}

// TestReliabilitySummaryFilesystemFaults: the summary file lives on a small tmpfs. First
// the filesystem is read-only (a disk remounted ro), then full; each time the appends fail,
// are counted and retried, traces keep flowing to the backend, no partial line appears, and
// once the fault ends every record lands exactly once.
func TestReliabilitySummaryFilesystemFaults(t *testing.T) {
	dir := t.TempDir()
	const tmpfsKB = 256
	mnt := mountTmpfs(t, dir, tmpfsKB)
	cfg := newStormConfig(t, dir)
	cfg.NumShards = 1
	cfg.SummaryPath = filepath.Join(mnt, "storms.jsonl")
	cfg.Summary = retryFast()
	sink := startBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)
	th := cleanThreshold(t, cfg.CleanPercent)

	weights := signalHeavy()
	roTraffic := generate(t, agenttraffic.Config{Seed: 41, Scenarios: weights}, 20)
	fullTraffic := generate(t, agenttraffic.Config{Seed: 42, Scenarios: weights}, 20)
	wantRO, wantFull := countRecords(truthOf(roTraffic)), countRecords(truthOf(fullTraffic))
	sentSpans := 0
	sendPhase := func(traces []agenttraffic.Trace) {
		n, _ := sendWhole(t, client, traces, 4)
		sentSpans += n
	}

	// The exporter opened and closed the file at start; no handle is open until the first
	// append, so the filesystem can be switched to read-only.
	remountTmpfs(t, mnt, true, tmpfsKB)
	sendPhase(roTraffic)
	m := waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "appends failing on the read-only filesystem, retried", func(m metrics) bool {
		return settledAt(m, sentSpans) && m.sum(metricWriteErrors, nil) >= 3
	})
	roErrors := m.sum(metricWriteErrors, nil)
	t.Run("read-only: backend unaffected", func(t *testing.T) {
		waitBackendHas(t, sink, truthOf(roTraffic), th)
		if f := readSummaryFile(t, cfg.SummaryPath); f.count() != 0 {
			t.Errorf("%d records on a read-only filesystem", f.count())
		}
	})
	remountTmpfs(t, mnt, false, tmpfsKB)
	m = waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "records written after the remount", func(m metrics) bool {
		return int(m.sum(metricRecordsWritten, nil)) == wantRO
	})
	t.Logf("read-only: %v failed appends retried, then %v records written once writable", roErrors, m.sum(metricRecordsWritten, nil))

	filler := fillFilesystem(t, mnt)
	sendPhase(fullTraffic)
	m = waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "appends failing on the full filesystem, retried", func(m metrics) bool {
		return settledAt(m, sentSpans) && m.sum(metricWriteErrors, nil) >= roErrors+3
	})
	fullErrors := m.sum(metricWriteErrors, nil) - roErrors
	t.Run("full: no partial line, backend unaffected", func(t *testing.T) {
		f := readSummaryFile(t, cfg.SummaryPath)
		if f.count() != wantRO {
			t.Errorf("%d records while the disk is full, want the %d written before", f.count(), wantRO)
		}
		waitBackendHas(t, sink, truthOf(fullTraffic), th)
	})
	if err := os.Remove(filler); err != nil {
		t.Fatalf("free the filesystem: %v", err)
	}
	m = waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "records written after space was freed", func(m metrics) bool {
		return int(m.sum(metricRecordsWritten, nil)) == wantRO+wantFull
	})
	t.Logf("full: %v failed appends retried, then %v records in all", fullErrors, m.sum(metricRecordsWritten, nil))
	p.stop(t)
	for _, cause := range []string{"read-only file system", "no space left on device"} {
		if !strings.Contains(p.log(), cause) {
			t.Errorf("the collector log never reports %q: the fault was not the one intended", cause)
		}
	}

	t.Run("every record once", func(t *testing.T) {
		f := readSummaryFile(t, cfg.SummaryPath)
		if d := f.duplicates(); len(d) > 0 {
			t.Errorf("records written twice: %v", d)
		}
		all := append(truthOf(roTraffic), truthOf(fullTraffic)...)
		checkSummaries(t, all, f.records, f.raw)
		checkFindingRecords(t, all, f.findings, nil)
		if got := m.sum(metricRecordsDedup, nil); got != 0 {
			t.Logf("%v records skipped as already written", got)
		}
	})
}

// TestReliabilityBackendFaults: the tracing backend first refuses every export, then hangs
// past the exporter's timeout, then recovers. The OTLP exporter retries (logged, one line
// per retry), nothing is given up, the summary file is written all along, and after
// recovery every kept trace is in the backend whole, each span once.
func TestReliabilityBackendFaults(t *testing.T) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.Backend = retryFast()
	cfg.Backend["timeout"] = "500ms"
	backend := startFaultyBackend(t, cfg.BackendPort)
	backend.mode.Store(backendRefuse)
	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)
	th := cleanThreshold(t, cfg.CleanPercent)

	traffic := generate(t, agenttraffic.Config{Seed: 51, Scenarios: signalHeavy()}, 30)
	truth := truthOf(traffic)
	spans, _ := sendWhole(t, client, traffic, 5)
	m := waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "traces decided and records written while the backend refuses", func(m metrics) bool {
		return settledAt(m, spans) &&
			int(m.sum(metricRecordsWritten, nil)) == countRecords(truth) && backend.refused.Load() >= 3
	})
	t.Logf("backend refusing: %d exports refused; %v records written meanwhile", backend.refused.Load(), m.sum(metricRecordsWritten, nil))

	backend.mode.Store(backendHang)
	eventually(t, settleTimeout, "the exporter retrying against the hanging backend", func() (bool, string) {
		return backend.hung.Load() >= 2, fmt.Sprintf("%d exports hung", backend.hung.Load())
	})
	backend.mode.Store(backendAccept)
	waitBackendHas(t, &backend.sink, truth, th)
	m, _ = scrape(cfg.MetricsPort)
	retries := strings.Count(p.log(), "Will retry the request after interval")
	t.Logf("backend hanging: %d exports timed out; after recovery %d accepted; %d retries logged", backend.hung.Load(), backend.accepted.Load(), retries)

	t.Run("retried, nothing given up", func(t *testing.T) {
		if retries < int(backend.refused.Load()+backend.hung.Load())-2 {
			t.Errorf("%d retries logged for %d refused and %d hung exports", retries, backend.refused.Load(), backend.hung.Load())
		}
		backendLabel := map[string]string{"exporter": "otlp_grpc/backend"}
		if got := m.sum(metricSendFailed, backendLabel); got != 0 {
			t.Errorf("%v spans given up by the backend exporter", got)
		}
		if got := m.sum(metricPrefix+"spans_dropped", map[string]string{"cause": "next_consumer_error"}); got != 0 {
			t.Errorf("%v spans dropped by retry_storm for a next-consumer error", got)
		}
	})
	t.Run("every kept trace once", func(t *testing.T) {
		checkBackendExactly(t, truth, &backend.sink, th)
	})
	t.Run("summary file", func(t *testing.T) {
		f := readSummaryFile(t, cfg.SummaryPath)
		checkSummaries(t, truth, f.records, f.raw)
		checkFindingRecords(t, truth, f.findings, nil)
	})
}
