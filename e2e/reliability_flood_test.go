//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// Issue 40: a client floods the collector with traces it keeps for itself (`ot=rv` at its
// maximum in tracestate, which consistent sampling honours), and the flood pushes kept
// decisions out of the decision cache. Late spans of an evicted storm trace then started
// over as a new trace whose analysis knew none of the first part's payloads: the card
// number in the late HTTP span's name, url.full, status message and exception event and in
// the model's text reached the backend, and the late attempt wrote a second record.
const (
	floodCard = "4111111111111111"
	floodIBAN = "DE89370400440532013000"
	// floodKept is decision_cache.kept_traces: the flood is scaled down with the cache
	// (the 120,000 one-span traces against the default 100,000).
	floodKept   = 400
	floodTraces = 3 * floodKept
	// floodForced is the tracestate a client writes to keep its trace at any rate.
	floodForced = "ot=rv:ffffffffffffff"
)

// TestReliabilityFloodOfForcedKeeps: a storm trace whose tool was given a card number and
// an IBAN is kept; late spans copying them (an HTTP send, a model answer, a late attempt)
// come before a flood, after a flood of clean forced keeps, and after a flood of forced
// keeps that show an error span. The storm's decision survives the clean flood, so its late
// spans are scrubbed as before; the signal flood can evict it, which is counted and logged,
// and its late spans are then dropped, not started over. The backend never receives the
// card or the IBAN, the summary file holds one record of the call, and the connector counts
// the call and the storm once.
func TestReliabilityFloodOfForcedKeeps(t *testing.T) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.DecisionWait, cfg.RootGrace = "2s", "200ms"
	cfg.Processor = yamlMap{"decision_cache": yamlMap{"kept_traces": floodKept}}
	logs := freePorts(t, 1)[0]
	logSink := startLogsBackend(t, logs)
	withSignals(t, &cfg, logs)
	sink := &startFaultyBackend(t, cfg.BackendPort).sink
	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)

	storm, attempt := floodStormTrace()
	sent := storm.Traces.SpanCount()
	client.mustExport(t, storm.Traces)
	recs := waitForRecord(t, p, cfg.SummaryPath, storm.traceID(), settleTimeout)
	id := stormrecord.RecordID(storm.traceID(), "call_flood")
	if len(recs) != 1 || recs[0].ID != id || !recs[0].Storm {
		t.Fatalf("records of the storm trace: %+v; want one storm record %s", recs, id)
	}

	late := func(round int) ptrace.Traces {
		b := continueTrace(storm.TraceID, agentService, "reliability", storm.Base)
		b.IDHigh = uint64(round) << 32
		floodLateSpans(b, attempt)
		return b.Traces
	}
	// Before the flood: the late spans follow the kept decision.
	sent += 3
	client.mustExport(t, late(1))
	m := waitSettled(t, p, cfg.MetricsPort, sent)
	if n := m.sum(metricLateSpans, map[string]string{"decision": "kept"}); n != 3 {
		t.Fatalf("late_spans{decision=kept} = %v before the flood, want 3", n)
	}

	// A flood of clean traces the client keeps for itself.
	sent += sendFlood(t, client, "clean", floodTraces, false)
	m = waitSettled(t, p, cfg.MetricsPort, sent)
	evicted := m.sum(metricPrefix+"decision_cache_evictions", map[string]string{"decision": "kept"})
	if evicted < floodTraces-floodKept {
		t.Fatalf("decision_cache_evictions{decision=kept} = %v after %d forced keeps; the flood did not fill the cache of %d", evicted, floodTraces, floodKept)
	}
	sent += 3
	client.mustExport(t, late(2))
	m = waitSettled(t, p, cfg.MetricsPort, sent)
	t.Logf("clean flood of %d forced keeps: %v kept decisions evicted, %v of them signal; late spans %v",
		floodTraces, evicted, m.sum(metricSignalEvictions, nil), m.by(metricLateSpans, "decision"))
	t.Run("the storm's decision survives a clean flood", func(t *testing.T) {
		if n := m.sum(metricSignalEvictions, nil); n != 0 {
			t.Errorf("signal_decisions_evicted = %v: a clean flood evicted signal decisions", n)
		}
		if n := m.sum(metricLateSpans, map[string]string{"decision": "kept"}); n != 6 {
			t.Errorf("late_spans{decision=kept} = %v after the flood, want 6", n)
		}
	})

	// A flood of forced keeps that each show an error span: signal decisions themselves.
	sent += sendFlood(t, client, "error", floodTraces, true)
	m = waitSettled(t, p, cfg.MetricsPort, sent)
	sent += 3
	client.mustExport(t, late(3))
	m = waitSettled(t, p, cfg.MetricsPort, sent)
	m = waitBackendDrained(t, p, cfg.MetricsPort)
	t.Logf("signal flood: signal decisions evicted %v; late spans %v; spans dropped %v",
		m.by(metricSignalEvictions, "reason"), m.by(metricLateSpans, "decision"), m.by(metricSpansDropped, "cause"))
	t.Run("a signal decision evicted is counted and logged, its late spans dropped", func(t *testing.T) {
		if n := m.sum(metricSignalEvictions, map[string]string{"reason": "storm"}); n < 1 {
			t.Errorf("signal_decisions_evicted{reason=storm} = %v, want the storm's decision counted", n)
		}
		if !strings.Contains(p.log(), "a kept signal decision was evicted from the decision cache") {
			t.Error("no log line for the evicted signal decision")
		}
		if n := m.sum(metricLateSpans, map[string]string{"decision": "forgotten"}); n != 3 {
			t.Errorf("late_spans{decision=forgotten} = %v, want the 3 late spans of the evicted trace", n)
		}
		if n := m.sum(metricSpansDropped, map[string]string{"cause": "forgotten"}); n != 3 {
			t.Errorf("spans_dropped{cause=forgotten} = %v, want 3", n)
		}
	})

	t.Run("no card number or IBAN at the backend", func(t *testing.T) {
		bt := backendTraces(sink)[storm.traceID()]
		if bt == nil {
			t.Fatal("the storm trace is not at the backend")
		}
		for _, span := range bt.spans {
			for _, s := range spanStrings(span) {
				if strings.Contains(s, floodCard) || strings.Contains(s, floodIBAN) {
					t.Errorf("span %q carries a payload value: %.200s", span.Name(), s)
				}
			}
		}
		if n := len(bt.spans); n != storm.Traces.SpanCount()+6 {
			t.Errorf("%d spans of the storm trace at the backend, want its %d and the 6 late spans of the first two rounds",
				n, storm.Traces.SpanCount())
		}
	})
	t.Run("one record, one call and one storm", func(t *testing.T) {
		f := readSummaryFile(t, cfg.SummaryPath)
		if n := f.byID[id]; n != 1 {
			t.Errorf("record %s written %d times, want once", id, n)
		}
		if recs := f.recordsOf(storm.traceID()); len(recs) != 1 {
			t.Errorf("%d records of the storm trace, want 1: %+v", len(recs), recs)
		}
		var lines []recordLine
		for _, l := range logRecords(t, logSink) {
			if l.id == id {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 {
			t.Errorf("the connector sent %d log records of record %s, want 1: %+v", len(lines), id, lines)
		}
		var c metrics
		eventually(t, settleTimeout, "the connector's metrics", func() (bool, string) {
			var err error
			c, err = scrape(cfg.Signals.PrometheusPort)
			return err == nil && c.sum(metricStormsTotal, nil) > 0, fmt.Sprint(err)
		})
		time.Sleep(time.Second) // two connector flushes after the last late span
		c, _ = scrape(cfg.Signals.PrometheusPort)
		if n := c.sum(metricStormsTotal, map[string]string{"tool": "charge_card"}); n != 1 {
			t.Errorf("connector storms of charge_card: %v, want 1", n)
		}
		if n := c.sum(metricCallsTotal, map[string]string{"tool": "charge_card"}); n != 1 {
			t.Errorf("connector calls of charge_card: %v, want 1", n)
		}
	})
}

// TestReliabilityFloodIgnoringClientRandomness: with sampling.tracestate_randomness off (a
// gateway facing clients it does not trust), the randomness a client writes in tracestate is
// not read: the flood's clean traces are sampled at clean_percent from their trace ids, and
// the kept ones carry a threshold their randomness passes, without the client's rv.
func TestReliabilityFloodIgnoringClientRandomness(t *testing.T) {
	s := startOneShot(t, func(c *stormConfig) {
		c.Processor = yamlMap{"sampling": yamlMap{"clean_percent": 5, "tracestate_randomness": false}}
	})
	var requests []ptrace.Traces
	const traces = 2000
	for i := 0; i < traces; i += 100 {
		requests = append(requests, floodRequest("ignored", i, 100, false))
	}
	m := s.send(t, requests...)
	kept := m.sum(metricTraces, map[string]string{"decision": "kept"})
	t.Logf("%d forced keeps with tracestate_randomness off: %v kept, %v dropped", traces, kept,
		m.sum(metricTraces, map[string]string{"decision": "dropped"}))
	// 5% of 2,000 is 100, standard deviation about 10.
	if kept > 150 {
		t.Errorf("%v of %d forced keeps kept: the client's rv was honoured", kept, traces)
	}
	for _, bt := range backendTraces(s.sink) {
		for _, span := range bt.spans {
			if ts := span.TraceState().AsRaw(); strings.Contains(ts, "rv:") {
				t.Errorf("a kept span carries the client's randomness: %q", ts)
				return
			}
		}
	}
}

const metricSignalEvictions = metricPrefix + "signal_decisions_evicted"

// floodStormTrace is an executor storm of charge_card whose arguments hold floodCard and
// floodIBAN; it returns the trace and the failed attempt's span id.
func floodStormTrace() (*spanBuilder, pcommon.SpanID) {
	b := newSpanBuilder("flood-storm")
	root := b.root(1000)
	args := fmt.Sprintf(`{"card":%q,"iban":%q,"amount":42}`, floodCard, floodIBAN)
	attempt := b.genai(root, "charge_card", "call_flood", args, 10, 100, nil)
	b.fail("upstream 503")
	b.genai(root, "charge_card", "call_flood", args, 200, 300, map[string]any{"gen_ai.tool.call.result": `{"receipt":"rcpt-2291-aa"}`})
	return b, attempt
}

// floodLateSpans adds three late spans copying the storm's payloads the way SDKs do: the
// HTTP send of an attempt (name, url.full, status message, exception event), a model
// answer quoting them, and a late attempt of the same call that records no arguments.
func floodLateSpans(b *spanBuilder, attempt pcommon.SpanID) {
	url := "https://pay.example/charge?card=" + floodCard + "&iban=" + floodIBAN
	b.span("POST /charge?card="+floodCard, attempt, 20, 90, map[string]any{
		"http.request.method": "POST", "url.full": url,
	})
	b.fail("card " + floodCard + " declined")
	ev := b.last().Events().AppendEmpty()
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.message", "declined: "+floodCard)
	b.span("chat gpt-4o", pcommon.SpanID{}, 400, 500, map[string]any{
		"gen_ai.operation.name": "chat",
		"gen_ai.output.messages": fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"text","content":"Charged card %s from %s."}]}]`,
			floodCard, floodIBAN),
	})
	// The late attempt's SDK records no arguments: nothing in the batch names the values.
	b.span("execute_tool charge_card", pcommon.SpanID{}, 600, 700, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "charge_card", "gen_ai.tool.call.id": "call_flood",
	})
	b.fail("upstream 503")
}

// sendFlood sends n one-span traces that their client keeps for itself (floodForced), 100
// a request, each with an error status when withError; it returns the spans sent.
func sendFlood(t *testing.T, client *otlpClient, name string, n int, withError bool) int {
	t.Helper()
	for i := 0; i < n; i += 100 {
		client.mustExport(t, floodRequest(name, i, min(100, n-i), withError))
	}
	return n
}

// floodRequest is count one-span traces of the flood named name, from number from.
func floodRequest(name string, from, count int, withError bool) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "flood-client")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	now := time.Now()
	for i := from; i < from+count; i++ {
		span := spans.AppendEmpty()
		sum := sha256.Sum256(fmt.Appendf(nil, "flood/%s/%d", name, i))
		span.SetTraceID(pcommon.TraceID(sum[:16]))
		span.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
		span.SetName("GET /health")
		span.TraceState().FromRaw(floodForced)
		span.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		span.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Millisecond)))
		if withError {
			span.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	return td
}

// The memory of forced keeps (issue 40): each kept trace's decision remembers the
// fingerprints of its payload values for its late spans, and a trace whose tool returned
// many values made a decision of about 82 KiB. 10,000 of them held 852 MiB resident with
// nothing buffered, where the documented bound for the configuration was 196 MiB.
const (
	// memoryKeeps traces of memoryValues distinct result values each, forced keeps.
	memoryKeeps  = 3000
	memoryValues = 2048
	// keptBytesDefault is decision_cache.kept_bytes' default: the decision cache's share of
	// the documented bound (README, "Memory").
	keptBytesDefault = 32 << 20
)

// TestReliabilityKeptDecisionsMemory: max_buffered_bytes 8 MiB, the decision cache at its
// defaults; 3,000 clean traces that their client keeps for itself, each with a tool result
// of 2,048 distinct values (each hunted in three forms). Peak resident memory stays within
// the documented bound, which counts the decision cache's bytes: idle + 6 ×
// max_buffered_bytes + 96 MiB + 2 × decision_cache.kept_bytes.
func TestReliabilityKeptDecisionsMemory(t *testing.T) {
	s := startOneShot(t, func(c *stormConfig) {
		c.MaxBufferedBytes = overloadBound
		c.DecisionWait, c.RootGrace = "2s", "100ms"
	})
	pid := s.p.cmd.Process.Pid
	s.send(t, stormTrace("memory-warm", "lookup", `{"q":"warm"}`).Traces)
	idleKB := procStatusKB(t, pid, "VmRSS")
	sampler := sampleRSS(pid, 50*time.Millisecond)

	var values []string
	for i := range memoryValues {
		values = append(values, fmt.Sprintf("entry %04d of the ledger", i))
	}
	result, _ := json.Marshal(map[string]any{"entries": values})
	start := time.Now()
	var requests []ptrace.Traces
	for i := 0; i < memoryKeeps; i += 10 {
		td := ptrace.NewTraces()
		for k := i; k < i+10; k++ {
			b := newSpanBuilder(fmt.Sprintf("memory-%d", k))
			root := b.root(500)
			b.last().TraceState().FromRaw(floodForced)
			b.genai(root, "read_ledger", fmt.Sprintf("call_%d", k), `{"page":1}`, 10, 100,
				map[string]any{"gen_ai.tool.call.result": string(result)})
			b.Traces.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
		}
		requests = append(requests, td)
	}
	m := s.send(t, requests...)
	peakKB, samples := sampler.finish()
	hwmKB := procStatusKB(t, pid, "VmHWM")
	limitKB := idleKB + overloadRSSFactor*overloadBound>>10 + overloadRSSFixedMiB<<10 + 2*keptBytesDefault>>10
	t.Logf("%d forced keeps of %d result values (%d kB of result each) in %s: kept %v; kept decisions evicted %v; idle RSS %d MiB, peak %d MiB (VmHWM %d MiB, %d samples), now %d MiB; bound idle + %d × %d MiB + %d MiB + 2 × %d MiB = %d MiB",
		memoryKeeps, memoryValues, len(result)>>10, time.Since(start).Round(time.Millisecond),
		m.sum(metricTraces, map[string]string{"decision": "kept"}), m.sum(metricPrefix+"decision_cache_evictions", map[string]string{"decision": "kept"}),
		idleKB>>10, peakKB>>10, hwmKB>>10, samples, procStatusKB(t, pid, "VmRSS")>>10,
		overloadRSSFactor, overloadBound>>20, overloadRSSFixedMiB, keptBytesDefault>>20, limitKB>>10)
	if n := m.sum(metricTraces, map[string]string{"decision": "kept", "reason": "clean"}); n < memoryKeeps {
		t.Fatalf("%v clean traces kept, want the %d forced keeps", n, memoryKeeps)
	}
	if b := m.sum(metricPrefix+"buffered_bytes", nil); b != 0 {
		t.Errorf("%v bytes still buffered", b)
	}
	if hwmKB > limitKB {
		t.Errorf("peak resident memory %d MiB exceeds the documented bound of %d MiB", hwmKB>>10, limitKB>>10)
	}
}
