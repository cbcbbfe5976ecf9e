//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/retrystorm/retrystorm/internal/stormreport"
)

// TestScanOfTheCollectorsInputRecordsWhatTheCollectorRecorded runs agentsim through the
// built collector with the contrib file exporter beside retry_storm, writing every span
// received as OTLP/JSON and as protobuf, then runs `stormreport scan --config` with the
// collector's own configuration over each file: the scan's records are the collector's
// records, and they hold to agentsim's ground truth.
func TestScanOfTheCollectorsInputRecordsWhatTheCollectorRecorded(t *testing.T) {
	dir := t.TempDir()
	agentsim, stormreportBin := buildAgentsim(t, dir), buildCommand(t, dir, "stormreport")
	cfg := pipelineConfig(t, dir, cleanPercent, numShards)
	jsonPath, protoPath := filepath.Join(dir, "traces.json"), filepath.Join(dir, "traces.pb")
	cfg.RawFiles = yamlMap{
		"file/json":  yamlMap{"path": jsonPath},
		"file/proto": yamlMap{"path": protoPath, "format": "proto"},
	}
	startBackend(t, cfg.BackendPort)
	collector := startStormCollector(t, dir, cfg)
	truthPath := filepath.Join(dir, "truth.jsonl")
	runAgentsim(t, agentsim, "--endpoint", loopback(cfg.OTLPPort), "--rate", "0",
		"--count", strconv.Itoa(agentCount), "--every-scenario", "--seed", strconv.Itoa(agentSeed),
		"--service", agentService, "--truth", truthPath)
	want := expect(t, readTruth(t, truthPath), cleanThreshold(t, cleanPercent))
	waitSettled(t, collector, cfg.MetricsPort, want.spans)
	collector.stop(t)

	live := scannedRecords(t, cfg.SummaryPath)
	if len(live) == 0 {
		t.Fatal("the collector wrote no records")
	}
	for _, in := range []string{jsonPath, protoPath} {
		t.Run(filepath.Base(in), func(t *testing.T) {
			out := filepath.Join(dir, filepath.Base(in)+".records.jsonl")
			cmd := exec.Command(stormreportBin, "scan", "--config", filepath.Join(dir, "collector.yaml"), "-o", out, "--json", in)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("stormreport scan %s: %v\n%s", in, err, stderr.String())
			}
			var report stormreport.Report
			if err := json.Unmarshal(stdout.Bytes(), &report); err != nil || report.Scan == nil {
				t.Fatalf("scan report: %v\n%s", err, stdout.String())
			}
			if report.Scan.BadLines != 0 || report.Scan.Spans != int64(want.spans) {
				t.Errorf("scan read %d spans (want %d), %d bad lines; stderr:\n%s", report.Scan.Spans, want.spans, report.Scan.BadLines, stderr.String())
			}
			scanned := scannedRecords(t, out)
			for _, r := range live {
				if !slices.Contains(scanned, r) {
					t.Errorf("the collector's record is not in the scan's:\n%s", r)
				}
			}
			for _, r := range scanned {
				if !slices.Contains(live, r) {
					t.Errorf("the scan's record is not in the collector's:\n%s", r)
				}
			}
			truthLine, err := exec.Command(stormreportBin, "--truth", truthPath, out).Output()
			if err != nil {
				t.Fatalf("stormreport --truth: %v", err)
			}
			if !strings.Contains(string(truthLine), "— match") {
				t.Errorf("the scan's records against the ground truth: %s", lastLine(string(truthLine)))
			}
		})
	}
}

// scannedRecords reads a summary file as stormreport does and returns its records as JSON,
// sorted, without their revision: a record is rewritten when a stale read is found after
// its trace was decided, so the count of rewrites depends on the order of decisions (by
// deadline in the collector, at the end of the input in a scan), not on what it says.
func scannedRecords(t *testing.T, path string) []string {
	t.Helper()
	files, err := stormreport.ResolveFiles([]string{path})
	if err != nil {
		t.Fatalf("summary files: %v", err)
	}
	input, err := stormreport.Read(files)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var out []string
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	for _, r := range input.Records {
		r.Revision = 0
		add(r)
	}
	for _, r := range input.Findings {
		r.Revision = 0
		add(r)
	}
	slices.Sort(out)
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
