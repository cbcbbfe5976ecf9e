package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// With --pieces each trace arrives in that many requests, its root in the last and no
// earlier than --piece-gap after its first; with --flood-rate a second service sends clean
// traces meanwhile.
func TestPiecesAndFlood(t *testing.T) {
	addr, c := startGRPC(t)
	truthPath := filepath.Join(t.TempDir(), "truth.jsonl")
	start := time.Now()
	code, stdout, stderr := runAgentsim(t, "--endpoint", addr, "--count", "6", "--rate", "20",
		"--scenarios", "executor_storm", "--pieces", "3", "--piece-gap", "150ms",
		"--flood-rate", "50", "--flood-service", "bulk-agent", "--truth", truthPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("a run of traces in 3 pieces 150ms apart took %s", took)
	}
	truth := readTruth(t, truthPath)
	victims := map[string]bool{}
	for _, tr := range truth {
		victims[tr.TraceID] = true
	}
	// Per victim trace: the requests its spans came in, and the one its root came in.
	requests := map[string]map[int]bool{}
	rootIn := map[string]int{}
	floodSpans := 0
	for k, td := range c.requests {
		for o, span := range tracespans.All(td) {
			res := o.Resource
			svc, _ := res.Attributes().Get("service.name")
			id := span.TraceID().String()
			switch {
			case svc.Str() == "bulk-agent":
				floodSpans++
				if victims[id] {
					t.Errorf("flood span in victim trace %s", id)
				}
			case victims[id]:
				if requests[id] == nil {
					requests[id] = map[int]bool{}
				}
				requests[id][k] = true
				if span.ParentSpanID().IsEmpty() {
					rootIn[id] = k
				}
			}
		}
	}
	for id := range victims {
		if len(requests[id]) < 3 {
			t.Errorf("trace %s came in %d requests, want 3", id, len(requests[id]))
		}
		for k := range requests[id] {
			if k > rootIn[id] {
				t.Errorf("trace %s: spans in request %d after its root's (%d)", id, k, rootIn[id])
			}
		}
	}
	if floodSpans == 0 || !strings.Contains(stdout, "flood bulk-agent:") || !strings.Contains(stdout, "0 failed to export") {
		t.Errorf("flood sent %d spans; stdout:\n%s", floodSpans, stdout)
	}
}
