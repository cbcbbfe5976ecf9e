package benchharness

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

type countingServer struct {
	ptraceotlp.UnimplementedGRPCServer
	spans atomic.Int64
}

func (s *countingServer) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	s.spans.Add(int64(req.Traces().SpanCount()))
	return ptraceotlp.NewExportResponse(), nil
}

// The replay driver's pre-encoded requests are valid OTLP export requests.
func TestReplaySendsEverySpanOverOTLP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	counter := &countingServer{}
	ptraceotlp.RegisterGRPCServer(srv, counter)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	w := newTestWorkload(t, WorkloadConfig{Seed: 4, Traces: 30, BatchSpans: 100})
	res := replay(context.Background(), w, l.Addr().String(), w.Traces(), 100000, 3)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.spans != w.Spans() || counter.spans.Load() != int64(w.Spans()) {
		t.Fatalf("sent %d, server got %d, workload has %d spans", res.spans, counter.spans.Load(), w.Spans())
	}
}
