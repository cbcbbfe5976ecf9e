//go:build e2e

package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// The overload run: a small buffer bound, and ten times that much agent traffic sent as
// fast as four concurrent clients can.
const (
	overloadBound = 8 << 20 // max_buffered_bytes
	// overloadTraces is enough generated traffic for more than 10× overloadBound of
	// OTLP-encoded bytes (about 29 kB per trace with the default 24 tool calls).
	overloadTraces  = 3000
	overloadSeed    = 71
	overloadClients = 4
	// The documented memory bound (docs/reliability.md): peak resident memory stays under
	// the idle process + overloadRSSFactor × max_buffered_bytes + overloadRSSFixedMiB. The
	// factor covers the buffer itself, the in-memory form of its spans (pdata is 2–3× its
	// OTLP encoding) and Go's GC headroom (GOGC=100); the fixed part covers receive
	// buffers, analysis scratch space and the exporter queues. Measured here: 8 MiB →
	// idle + 110–118 MiB, 32 MiB → idle + 207 MiB, 64 MiB → idle + 369 MiB.
	overloadRSSFactor   = 6
	overloadRSSFixedMiB = 96
)

// TestReliabilityOverload drives the built collector, with max_buffered_bytes at 8 MiB,
// with more than ten times that in agent traffic. Every storm, error and divergence trace
// must reach the summary file and the backend, resident memory must stay under the bound
// plus the documented overhead, every span must be accounted for, and the collector must
// go on deciding traffic afterwards.
func TestReliabilityOverload(t *testing.T) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.MaxBufferedBytes = overloadBound
	// Decisions by deadline come late, so the buffer fills and memory pressure decides.
	cfg.DecisionWait, cfg.RootGrace = "10s", "3s"
	sink := startBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg)
	pid := p.cmd.Process.Pid
	client := dialOTLP(t, cfg.OTLPPort)

	// Warm the pipeline with one trace so the idle figure includes initialised components.
	warm := stormTrace("overload-warmup", "lookup_customer", `{"id":"c-1"}`)
	client.mustExport(t, warm.Traces)
	waitMetrics(t, p, cfg.MetricsPort, settleTimeout, "warm-up trace decided", func(m metrics) bool {
		return m.sum(metricTraces, nil) == 1
	})
	idleKB := procStatusKB(t, pid, "VmRSS")

	traces := generate(t, agenttraffic.Config{Seed: overloadSeed, Scenarios: withoutStaleCache()}, overloadTraces)
	truth := truthOf(traces)
	sampler := sampleRSS(pid, 50*time.Millisecond)
	start := time.Now()
	spans, bytes := sendConcurrently(t, client, traces, overloadClients, 16)
	sendTime := time.Since(start)
	if bytes < 10*overloadBound {
		t.Fatalf("sent %d bytes, less than 10× the %d-byte bound: raise overloadTraces", bytes, overloadBound)
	}
	mid, _ := scrape(cfg.MetricsPort)
	waitSettled(t, p, cfg.MetricsPort, spans+warm.Traces.SpanCount())
	settleTime := time.Since(start)
	m := waitBackendDrained(t, p, cfg.MetricsPort)
	peakKB, samples := sampler.finish()
	hwmKB := procStatusKB(t, pid, "VmHWM")

	th := cleanThreshold(t, cfg.CleanPercent)
	early := int(m.sum(metricEarlyDecisions, map[string]string{"cause": "memory_pressure"}))
	t.Logf("sent %d traces, %d spans, %.1f MiB OTLP (%.1f× the %d MiB bound) in %s with %d clients; settled after %s",
		len(traces), spans, float64(bytes)/(1<<20), float64(bytes)/overloadBound, overloadBound>>20,
		sendTime.Round(time.Millisecond), overloadClients, settleTime.Round(time.Millisecond))
	limitKB := idleKB + overloadRSSFactor*overloadBound>>10 + overloadRSSFixedMiB<<10
	t.Logf("memory: idle RSS %d MiB, peak RSS %d MiB (VmHWM %d MiB, %d samples); documented limit idle + %d × %d MiB + %d MiB = %d MiB",
		idleKB>>10, peakKB>>10, hwmKB>>10, samples, overloadRSSFactor, overloadBound>>20, overloadRSSFixedMiB, limitKB>>10)
	t.Logf("decisions: %d early for memory pressure, %v by (decision, reason); late spans %v",
		early, m.byPair(metricTraces, "decision", "reason"), m.by(metricLateSpans, "decision"))
	if r, f, d, b, ok := accounted(mid); mid != nil {
		t.Logf("mid-run scrape: received %d = forwarded %d + dropped %d + buffered %d? %v (off by %d in flight)", r, f, d, b, ok, r-f-d-b)
	}

	t.Run("memory", func(t *testing.T) {
		if hwmKB > limitKB {
			t.Errorf("peak resident memory %d MiB exceeds idle %d MiB + %d × the %d MiB bound + %d MiB",
				hwmKB>>10, idleKB>>10, overloadRSSFactor, overloadBound>>20, overloadRSSFixedMiB)
		}
	})
	t.Run("pressure", func(t *testing.T) {
		if early == 0 {
			t.Error("no early decision for memory pressure: the run did not overload the buffer")
		}
	})
	t.Run("accounting", func(t *testing.T) {
		r, f, d, b, ok := accounted(m)
		if !ok || b != 0 {
			t.Errorf("spans received %d != forwarded %d + dropped %d + buffered %d", r, f, d, b)
		}
		if r != spans+warm.Traces.SpanCount() {
			t.Errorf("spans received %d, sent %d", r, spans+warm.Traces.SpanCount())
		}
	})
	t.Run("summary file", func(t *testing.T) {
		f := readSummaryFileMust(t, cfg.SummaryPath)
		// The warm-up trace has its own record; checkSummaries holds the rest to the truth.
		checkSummaries(t, truth, withoutTrace(f.latest(t), warm.traceID()), f.raw)
	})
	t.Run("backend", func(t *testing.T) {
		checkBackendExactly(t, truth, sink, th, warm.traceID())
	})
	t.Run("serves afterwards", func(t *testing.T) {
		after := stormTrace("overload-after", "create_ticket", `{"title":"printer on fire"}`)
		client.mustExport(t, after.Traces)
		waitForRecord(t, p, cfg.SummaryPath, after.traceID(), settleTimeout)
	})
}

// sendConcurrently sends the traces whole, perRequest per request, from n goroutines over
// one connection, and returns the spans and OTLP bytes sent.
func sendConcurrently(t *testing.T, client *otlpClient, traces []agenttraffic.Trace, n, perRequest int) (spans, bytes int) {
	t.Helper()
	var batches []ptrace.Traces
	var sizer ptrace.ProtoMarshaler
	for start := 0; start < len(traces); start += perRequest {
		td := ptrace.NewTraces()
		for i := start; i < min(start+perRequest, len(traces)); i++ {
			agenttraffic.AppendPdata(td, &traces[i])
		}
		spans += td.SpanCount()
		bytes += sizer.TracesSize(td)
		batches = append(batches, td)
	}
	work := make(chan ptrace.Traces)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for td := range work {
				if err := client.export(td); err != nil {
					errs <- fmt.Errorf("export %d spans: %w", td.SpanCount(), err)
					return
				}
			}
		}()
	}
	for _, td := range batches {
		work <- td
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return spans, bytes
}

// checkBackendExactly: the backend holds exactly the traces a correct retry_storm keeps
// (every signal trace, the clean traces consistent sampling selects), each whole, with no
// span twice and no raw payload. Traces in also are allowed on top (canaries).
func checkBackendExactly(t *testing.T, truth []agenttraffic.Truth, sink *consumertest.TracesSink, th sampling.Threshold, also ...string) {
	t.Helper()
	perTrace, perSpan := spanCounts(sink)
	for key, n := range perSpan {
		if n > 1 {
			t.Errorf("the backend received span %s of trace %s %d times", key[1], key[0], n)
		}
	}
	backend := backendTraces(sink)
	known := map[string]bool{}
	for _, id := range also {
		known[id] = true
	}
	keptSignal, keptClean := 0, 0
	for _, tr := range truth {
		known[tr.TraceID] = true
		keep := tr.Keep || keepsClean(t, th, tr.TraceID)
		bt := backend[tr.TraceID]
		switch {
		case !keep && bt != nil:
			t.Errorf("trace %s (%s, reason %s) reached the backend; the consistent rule drops it", tr.TraceID, tr.Scenario, tr.Reason)
		case keep && bt == nil:
			t.Errorf("trace %s (%s, %s, reason %s) never reached the backend", tr.TraceID, tr.Scenario, tr.Shape, tr.Reason)
		case keep:
			if tr.Keep {
				keptSignal++
			} else {
				keptClean++
			}
			if perTrace[tr.TraceID] != tr.Spans {
				t.Errorf("trace %s (%s): the backend has %d spans, %d were sent", tr.TraceID, tr.Scenario, perTrace[tr.TraceID], tr.Spans)
			}
			checkKeptTrace(t, &tr, bt, th)
			checkNoSecrets(t, &tr, bt)
		}
	}
	for id := range backend {
		if !known[id] {
			t.Errorf("the backend received trace %s, which was never sent", id)
		}
	}
	t.Logf("backend: %d signal traces and %d clean traces kept, as the truth and the %s threshold say", keptSignal, keptClean, th.TValue())
}
