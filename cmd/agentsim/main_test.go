package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// collector records what an OTLP receiver got: span count and trace ids per service.
type collector struct {
	mu       sync.Mutex
	spans    int
	traceIDs map[string]bool
	services map[string]bool
	// requests holds every request received, in order.
	requests []ptrace.Traces
}

func newCollector() *collector {
	return &collector{traceIDs: map[string]bool{}, services: map[string]bool{}}
}

func (c *collector) add(td ptrace.Traces) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, td)
	for o, span := range tracespans.All(td) {
		res := o.Resource
		if v, ok := res.Attributes().Get("service.name"); ok {
			c.services[v.Str()] = true
		}
		c.spans++
		c.traceIDs[span.TraceID().String()] = true
	}
}

type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	c *collector
}

func (r *grpcReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	er := ptraceotlp.NewExportRequest()
	if err := er.UnmarshalProto(b); err != nil {
		return nil, err
	}
	r.c.add(er.Traces())
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func startGRPC(t *testing.T) (string, *collector) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, &grpcReceiver{c: c})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), c
}

func startHTTP(t *testing.T) (string, *collector) {
	t.Helper()
	c := newCollector()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		er := ptraceotlp.NewExportRequest()
		if err != nil || r.URL.Path != "/v1/traces" || er.UnmarshalProto(body) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		c.add(er.Traces())
		resp, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), c
}

func readTruth(t *testing.T, path string) []agenttraffic.Truth {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []agenttraffic.Truth
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var tr agenttraffic.Truth
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil {
			t.Fatalf("truth line: %v", err)
		}
		out = append(out, tr)
	}
	return out
}

func runAgentsim(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestSendsEveryScenarioOverBothProtocols(t *testing.T) {
	for _, protocol := range []string{protocolGRPC, protocolHTTP} {
		t.Run(protocol, func(t *testing.T) {
			start := map[string]func(*testing.T) (string, *collector){protocolGRPC: startGRPC, protocolHTTP: startHTTP}[protocol]
			addr, c := start(t)
			truthPath := filepath.Join(t.TempDir(), "truth.jsonl")
			code, stdout, stderr := runAgentsim(t, "--protocol", protocol, "--endpoint", addr, "--count", "18",
				"--every-scenario", "--rate", "0", "--seed", "3", "--truth", truthPath, "--service", "sim-agent")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			truth := readTruth(t, truthPath)
			if len(truth) < 18 {
				t.Fatalf("%d truth lines, want at least 18", len(truth))
			}
			spans := 0
			for _, tr := range truth {
				spans += tr.Spans
				if !c.traceIDs[tr.TraceID] {
					t.Errorf("trace %s (%s) never reached the receiver", tr.TraceID, tr.Scenario)
				}
			}
			if c.spans != spans || len(c.traceIDs) != len(truth) || !c.services["sim-agent"] {
				t.Errorf("receiver got %d spans in %d traces from %v; truth says %d in %d", c.spans,
					len(c.traceIDs), c.services, spans, len(truth))
			}
			for _, sc := range agenttraffic.AllScenarios() {
				if !strings.Contains(stdout, string(sc)) {
					t.Errorf("summary lacks scenario %s:\n%s", sc, stdout)
				}
			}
			if !strings.Contains(stdout, "total") || !strings.Contains(stdout, "0 failed to export") {
				t.Errorf("summary:\n%s", stdout)
			}
		})
	}
}

func TestTruthIsDeterministic(t *testing.T) {
	addr, _ := startHTTP(t)
	dir := t.TempDir()
	var files [2][]byte
	for i := range files {
		path := filepath.Join(dir, "truth.jsonl")
		if code, _, stderr := runAgentsim(t, "--protocol", "http", "--endpoint", addr, "--count", "30",
			"--rate", "0", "--seed", "9", "--truth", path); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var err error
		if files[i], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if string(files[0]) != string(files[1]) || len(files[0]) == 0 {
		t.Error("one seed wrote two different truths")
	}
}

func TestExportFailureExitsNonZero(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	code, _, stderr := runAgentsim(t, "--endpoint", addr, "--count", "2", "--rate", "0", "--timeout", "1s")
	if code != 1 || !strings.Contains(stderr, "agentsim:") {
		t.Fatalf("exit %d, stderr %q; want 1 with an export error", code, stderr)
	}
}

func TestRejectsBadFlags(t *testing.T) {
	tests := [][]string{
		{"--protocol", "udp"},
		{"--every-scenario", "--count", "5"},
		{"--shapes", "logfire_mcp", "--scenarios", "agent_storm=1"},
		{"--scenarios", "storm=1"},
		{"--count", "-1"},
		{"--pieces", "0"},
		{"--flood-rate", "5", "--flood-service", "checkout-agent"},
		{"--stale-pairs", "0"},
		{"--stale-pairs", "65"},
		{"extra"},
	}
	for _, args := range tests {
		if code, _, stderr := runAgentsim(t, args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a message", args, code, stderr)
		}
	}
}

// TestShapeAttemptRecordAndItsOldName: --shapes takes attempt_record, and seed_record, its
// deprecated name, as the same shape.
func TestShapeAttemptRecordAndItsOldName(t *testing.T) {
	for _, name := range []string{"attempt_record", "seed_record"} {
		o, err := parseFlags([]string{"--shapes", name, "--count", "1"}, io.Discard)
		if err != nil || len(o.traffic.Shapes) != 1 || o.traffic.Shapes[0] != agenttraffic.ShapeAttemptRecord {
			t.Errorf("--shapes %s: %v, %v", name, o.traffic.Shapes, err)
		}
	}
}

func TestDurationBoundsTheRun(t *testing.T) {
	addr, c := startGRPC(t)
	code, _, stderr := runAgentsim(t, "--endpoint", addr, "--duration", "300ms", "--rate", "20",
		"--scenarios", "clean", "--tools-per-trace", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := len(c.traceIDs); n < 2 || n > 12 {
		t.Errorf("%d traces in 300ms at 20/s", n)
	}
}

// TestStalePairsSendsEveryPairWhole: a run bounded by --count still sends every pair of a
// stale_cache draw of --stale-pairs pairs, and the truth names each stale read's warm trace.
func TestStalePairsSendsEveryPairWhole(t *testing.T) {
	addr, c := startGRPC(t)
	path := filepath.Join(t.TempDir(), "truth.jsonl")
	code, _, stderr := runAgentsim(t, "--endpoint", addr, "--count", "3", "--rate", "0", "--seed", "4",
		"--scenarios", "stale_cache", "--stale-pairs", "3", "--tools-per-trace", "2", "--truth", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stale, warm := map[string]bool{}, map[string]string{}
	for line := range strings.Lines(string(raw)) {
		var tr agenttraffic.Truth
		if err := json.Unmarshal([]byte(line), &tr); err != nil {
			t.Fatal(err)
		}
		if tr.WarmFor != "" {
			warm[tr.TraceID] = tr.WarmFor
		} else {
			stale[tr.TraceID] = true
		}
	}
	if len(stale) != 3 || len(warm) != 3 {
		t.Fatalf("%d stale reads and %d warm traces, want 3 of each (one draw of 3 pairs)", len(stale), len(warm))
	}
	for w, s := range warm {
		if !stale[s] {
			t.Errorf("warm trace %s is for %s, not sent", w, s)
		}
	}
	if len(c.traceIDs) != 6 {
		t.Errorf("the receiver got %d traces, want 6", len(c.traceIDs))
	}
}
