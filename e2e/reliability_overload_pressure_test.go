//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// Issue 18: storms lost to pressure. A victim tenant's storm traces arrive as SDK batch
// exporters send long runs while another tenant floods the collector, and one agent run
// outgrows its shard's share; every storm of the victim must be recorded.
const (
	pressureBound      = 4 << 20 // max_buffered_bytes
	pressureVictims    = 20
	pressureFloodFor   = 7 * time.Second
	pressurePieceGap   = 2500 * time.Millisecond
	pressureFloodSvc   = "bulk-agent"
	pressureFloodBatch = 16 // flood traces per request
)

// TestReliabilityOverloadPiecesUnderFlood: max_buffered_bytes 4 MiB; a second service sends
// clean traces at about ten times that over 7 s; meanwhile 20 storm traces arrive in two
// requests 2.5 s apart: first what ended before the storm (model and tool spans,
// clean-looking, no root), then the storm's attempts, what ended after them and the root.
// The flood is of whole traces (decided first under pressure) or of fragments waiting for
// a root that never comes (decided oldest first, the victims' first pieces among them).
func TestReliabilityOverloadPiecesUnderFlood(t *testing.T) {
	for _, rootless := range []bool{false, true} {
		name := map[bool]string{false: "flood of whole traces", true: "flood of fragments"}[rootless]
		t.Run(name, func(t *testing.T) { piecesUnderFlood(t, rootless) })
	}
}

func piecesUnderFlood(t *testing.T, rootless bool) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.MaxBufferedBytes = pressureBound
	// Deadlines come late, so the flood fills the buffer and memory pressure decides.
	cfg.DecisionWait, cfg.RootGrace = "10s", "3s"
	startBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)

	victims := generate(t, agenttraffic.Config{Seed: 181, Scenarios: agenttraffic.ScenarioWeights{
		agenttraffic.ScenarioExecutorStorm: 1, agenttraffic.ScenarioTransportStorm: 1, agenttraffic.ScenarioAgentStorm: 1,
	}}, pressureVictims)
	flood, floodTraces, floodBytes := floodRequests(t, rootless)
	schedule := victimSchedule(victims)

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs <- sendPaced(client, flood, pressureFloodFor)
	}()
	go func() {
		defer wg.Done()
		errs <- sendScheduled(client, start, schedule)
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sendTime := time.Since(start)
	spans := 0
	for _, td := range flood {
		spans += td.SpanCount()
	}
	for _, s := range schedule {
		spans += s.td.SpanCount()
	}
	m := waitSettled(t, p, cfg.MetricsPort, spans)
	truth := truthOf(victims)
	f, missing := waitStormRecords(t, p, cfg.SummaryPath, truth)
	early := int(m.sum(metricEarlyDecisions, map[string]string{"cause": "memory_pressure"}))
	partial := 0
	for _, r := range f.records {
		if r.Partial {
			partial++
		}
	}
	t.Logf("flood: %d clean traces of %s, %.1f MiB OTLP (%.1f× the %d MiB bound) over %s; victims: %d storm traces in 2 pieces %s apart; settled after %s",
		floodTraces, pressureFloodSvc, float64(floodBytes)/(1<<20), float64(floodBytes)/pressureBound, pressureBound>>20,
		pressureFloodFor, len(victims), pressurePieceGap, time.Since(start).Round(time.Millisecond))
	t.Logf("decisions: %d early for memory pressure; late spans %v; late signals %v; %d storm records expected, %d written (%d partial); send took %s",
		early, m.by(metricLateSpans, "decision"), m.byPair(metricLateSignals, "cause", "reason"), stormCount(truth),
		len(f.records), partial, sendTime.Round(time.Millisecond))

	t.Run("pressure", func(t *testing.T) {
		if early == 0 {
			t.Error("no early decision for memory pressure: the flood did not overload the buffer")
		}
	})
	t.Run("every victim storm recorded", func(t *testing.T) {
		for _, what := range missing {
			t.Errorf("no storm record for %s", what)
		}
		if dups := f.duplicates(); len(dups) > 0 {
			t.Errorf("records written more than once: %v", dups)
		}
	})
	t.Run("accounting", func(t *testing.T) {
		r, fw, d, b, ok := accounted(m)
		if !ok || b != 0 || r != spans {
			t.Errorf("spans received %d (sent %d) != forwarded %d + dropped %d + buffered %d", r, spans, fw, d, b)
		}
	})
}

func stormCount(truth []agenttraffic.Truth) int {
	n := 0
	for _, tr := range truth {
		for _, rec := range tr.Records {
			if rec.Storm {
				n++
			}
		}
	}
	return n
}

// TestReliabilityOverloadOversizedTrace: one agent run of about 9 MiB (400 model spans with
// captured content, sent 100 spans a request, the storm and the root in the last request)
// in a collector whose shard share is 2 MiB. It used to be decided clean from its first
// spans and the rest dropped as late: now its storm is recorded, as part of the trace.
func TestReliabilityOverloadOversizedTrace(t *testing.T) {
	s := startOneShot(t, func(c *stormConfig) {
		c.MaxBufferedBytes = pressureBound
		c.DecisionWait, c.RootGrace = "10s", "1s"
	})
	b := newSpanBuilder("pressure/oversized")
	rootID := pcommon.SpanID{0x0f, 0xee}
	content := strings.Repeat("the model read the ledger and wrote this down; ", 480) // about 22 kB
	for i := range 400 {
		b.span("chat gpt-4o", rootID, int64(i*20), int64(i*20+15), map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.output.messages": fmt.Sprintf(`[{"role":"assistant","content":"%d: %s"}]`, i, content),
		})
	}
	b.genai(rootID, "charge_card", "call_oversized", `{"amount":42}`, 8100, 8200, nil)
	b.fail("upstream 503")
	b.genai(rootID, "charge_card", "call_oversized", `{"amount":42}`, 8300, 8400, map[string]any{"gen_ai.tool.call.result": `{"ok":true}`})
	b.rootWithID(rootID)
	var requests []ptrace.Traces
	var sizer ptrace.ProtoMarshaler
	bytes := 0
	for from := 0; from < 400; from += 100 {
		to := from + 100
		if to == 400 {
			to = b.Spans.Len()
		}
		requests = append(requests, b.request(from, to))
		bytes += sizer.TracesSize(requests[len(requests)-1])
	}
	if bytes < 8<<20 {
		t.Fatalf("the trace is %d bytes, want about 9 MiB", bytes)
	}
	start := time.Now()
	m := s.send(t, requests...)
	records := waitForRecord(t, s.p, s.cfg.SummaryPath, b.traceID(), settleTimeout)
	t.Logf("one trace of %d spans, %.1f MiB OTLP in %d requests (shard share %d MiB): early decisions %v, late spans %v, late signals %v, spans dropped %v; decided in %s",
		b.Spans.Len(), float64(bytes)/(1<<20), len(requests), pressureBound>>21, m.by(metricEarlyDecisions, "cause"),
		m.by(metricLateSpans, "decision"), m.byPair(metricLateSignals, "cause", "reason"), m.by(metricSpansDropped, "cause"),
		time.Since(start).Round(time.Millisecond))
	want := stormrecord.RecordID(b.traceID(), "call_oversized")
	i := slices.IndexFunc(records, func(r stormrecord.Record) bool { return r.ID == want })
	if i < 0 {
		t.Fatalf("no record of the storm; records of the trace: %+v", records)
	}
	if r := records[i]; !r.Storm || r.Attempts != 2 || !r.Partial {
		t.Errorf("record: storm %v, attempts %d, partial %v; want a storm of 2 attempts covering part of the trace", r.Storm, r.Attempts, r.Partial)
	}
	if n := m.sum(metricLateSignals, map[string]string{"cause": "trace_bytes", "reason": "storm"}); n != 1 {
		t.Errorf("late_signals{cause=trace_bytes,reason=storm} = %v, want 1", n)
	}
	if n := m.sum(metricSpansDropped, map[string]string{"cause": "late"}); n != 0 {
		t.Errorf("%v spans dropped as late spans of a dropped trace", n)
	}
	if !strings.Contains(s.p.log(), "a signal arrived after its trace was decided provisionally") {
		t.Error("no log line for the late signal")
	}
}

const metricLateSignals = metricPrefix + "late_signals"

// floodRequests builds the flood: clean traces of pressureFloodSvc, without their root
// when rootless, pressureFloodBatch to a request, until they weigh ten times
// max_buffered_bytes. A hundred traces are generated and copied under new trace ids: the
// flood needs bytes, not variety, and generating each would cost the test half a minute.
func floodRequests(t *testing.T, rootless bool) (requests []ptrace.Traces, traces, bytes int) {
	t.Helper()
	base := generate(t, agenttraffic.Config{Seed: 182, Service: pressureFloodSvc,
		Scenarios: agenttraffic.ScenarioWeights{agenttraffic.ScenarioClean: 1}}, 100)
	var sizer ptrace.ProtoMarshaler
	td := ptrace.NewTraces()
	for copyN := 0; bytes < 10*pressureBound; copyN++ {
		if copyN > 255 {
			t.Fatal("the flood does not reach ten times the bound")
		}
		for i := range base {
			one := agenttraffic.TraceToPdata(&base[i])
			spans := one.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
			if rootless {
				spans.RemoveIf(func(s ptrace.Span) bool { return s.ParentSpanID().IsEmpty() })
			}
			for k := 0; k < spans.Len(); k++ {
				id := spans.At(k).TraceID()
				id[0] ^= byte(copyN)
				spans.At(k).SetTraceID(id)
			}
			one.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
			traces++
			if td.ResourceSpans().Len() == pressureFloodBatch {
				bytes += sizer.TracesSize(td)
				requests = append(requests, td)
				td = ptrace.NewTraces()
			}
		}
	}
	if td.ResourceSpans().Len() > 0 {
		bytes += sizer.TracesSize(td)
		requests = append(requests, td)
	}
	return requests, traces, bytes
}

// sendPaced sends the requests evenly over d (as fast as the collector takes them, if
// slower).
func sendPaced(client *otlpClient, requests []ptrace.Traces, d time.Duration) error {
	every := d / time.Duration(len(requests))
	next := time.Now()
	for _, td := range requests {
		time.Sleep(time.Until(next))
		if err := client.export(td); err != nil {
			return fmt.Errorf("export flood request of %d spans: %w", td.SpanCount(), err)
		}
		next = next.Add(every)
	}
	return nil
}

// scheduled is a request to send at an offset from the start.
type scheduled struct {
	at time.Duration
	td ptrace.Traces
}

// victimSchedule sends each storm trace in two pieces (stormPieces) pressurePieceGap apart,
// one trace every 200 ms.
func victimSchedule(traces []agenttraffic.Trace) []scheduled {
	var out []scheduled
	for i := range traces {
		at := time.Duration(i) * 200 * time.Millisecond
		first, rest := stormPieces(&traces[i])
		if first.SpanCount() > 0 {
			out = append(out, scheduled{at: at, td: first})
		}
		out = append(out, scheduled{at: at + pressurePieceGap, td: rest})
	}
	slices.SortStableFunc(out, func(a, b scheduled) int { return int(a.at - b.at) })
	return out
}

func sendScheduled(client *otlpClient, start time.Time, requests []scheduled) error {
	for _, s := range requests {
		time.Sleep(time.Until(start.Add(s.at)))
		if err := client.export(s.td); err != nil {
			return fmt.Errorf("export victim piece of %d spans: %w", s.td.SpanCount(), err)
		}
	}
	return nil
}

// stormPieces cuts a trace in end order (agenttraffic.EndOrder) where its storm begins: the
// first piece holds what ended before the storm's first span (an attempt, or a send under
// one), the second the storm and everything after it, the root last.
func stormPieces(tr *agenttraffic.Trace) (first, rest ptrace.Traces) {
	storm := map[string]bool{}
	for _, rec := range tr.Truth.Records {
		if rec.Storm {
			for _, id := range rec.AttemptSpanIDs {
				storm[id] = true
			}
		}
	}
	order := agenttraffic.EndOrder(tr)
	cut := len(order)
	for k, i := range order {
		if s := &tr.Spans[i]; storm[s.ID.String()] || storm[s.Parent.String()] {
			cut = k
			break
		}
	}
	return agenttraffic.PieceToPdata(tr, order[:cut]), agenttraffic.PieceToPdata(tr, order[cut:])
}

// waitStormRecords polls the summary file until it holds a storm record for every storm the
// truth expects, or settleTimeout passes; it returns the file and what is still missing.
func waitStormRecords(t *testing.T, p *collectorProcess, path string, truth []agenttraffic.Truth) (summaryFile, []string) {
	t.Helper()
	var f summaryFile
	var missing []string
	poll(settleTimeout, func() (bool, string) {
		f = readSummaryFile(t, path)
		missing = missingStorms(truth, f)
		if len(missing) > 0 {
			p.alive(t)
		}
		return len(missing) == 0, ""
	})
	return f, missing
}

// missingStorms lists the truth's storm records that have no storm record in f, matched
// by id (trace and call key) or, for calls without an id, by attempt span ids.
func missingStorms(truth []agenttraffic.Truth, f summaryFile) []string {
	have := map[string]bool{}
	for _, r := range f.records {
		if r.Storm {
			have[r.ID] = true
			have[r.TraceID+"/"+strings.Join(r.AttemptSpanIDs, ",")] = true
		}
	}
	var out []string
	for _, tr := range truth {
		for _, rec := range tr.Records {
			if !rec.Storm {
				continue
			}
			if rec.CallKey != "" && have[stormrecord.RecordID(tr.TraceID, rec.CallKey)] ||
				have[tr.TraceID+"/"+strings.Join(rec.AttemptSpanIDs, ",")] {
				continue
			}
			out = append(out, fmt.Sprintf("trace %s (%s, %s) call %s", tr.TraceID, tr.Scenario, tr.Shape, callName(rec)))
		}
	}
	return out
}
