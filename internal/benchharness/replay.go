package benchharness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// exportMethod is the OTLP trace export RPC.
const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// rawCodec sends pre-encoded requests as they are: a workload request (TracesData) is
// wire-identical to an ExportTraceServiceRequest, both holding resource_spans as field 1.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot send %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot receive into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// replayResult is what a replay drive sent.
type replayResult struct {
	spans int
	cpu   time.Duration
	err   error
}

// replay sends the first requests of w holding traces traces to endpoint over OTLP gRPC,
// paced at rate traces per second, from senders concurrent exporters. Sending costs the
// driver almost nothing (the requests are already encoded), so a collector that cannot keep
// up shows as a drive that takes longer than planned.
func replay(ctx context.Context, w *Workload, endpoint string, traces int, rate float64, senders int) replayResult {
	res := replayResult{}
	cpu0 := processCPU()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		res.err = fmt.Errorf("connect to %s: %w", endpoint, err)
		return res
	}
	defer conn.Close()
	last := w.lastBatchOf(traces)
	spansPerTrace := float64(w.Spans()) / float64(w.Traces())
	work := make(chan int)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp []byte
			for i := range work {
				b := w.batches[i]
				req := w.store.bytes(b)
				if err := conn.Invoke(ctx, exportMethod, &req, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("export request %d: %w", i, err))
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
send:
	for i := 0; i <= last; i++ {
		due := start.Add(time.Duration(float64(res.spans) / (rate * spansPerTrace) * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		select {
		case work <- i:
			res.spans += w.BatchSpans(i)
		case <-ctx.Done():
			break send
		}
	}
	close(work)
	wg.Wait()
	res.cpu = processCPU() - cpu0
	if len(errs) > 0 {
		res.err = fmt.Errorf("%d failed exports, first: %w", len(errs), errs[0])
	}
	return res
}

// lastBatchOf is the request holding the last span of the first n traces.
func (w *Workload) lastBatchOf(n int) int {
	n = min(max(n, 1), len(w.traces))
	return w.traces[n-1].lastBatch
}
