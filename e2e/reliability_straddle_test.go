//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// TestReliabilityStormStraddlingAProvisionalDecision (issue 40): one agent run of about
// 9 MiB in a collector whose shard share is 2 MiB, sent 100 spans a request. Its charge
// failed in the first request and succeeded on retry in the last, with the root: each
// request takes the trace past max_trace_bytes, so it is decided provisionally part by
// part. The call was recorded from the first part alone, 1 attempt, ["error"],
// unrecovered_failure, not partial, with no storm record, no log line, the call counted
// twice and the trace once per part. Now the attempts of a provisional part are held with
// the trace's rest: the call is recorded once, partial, as the storm the trace shows.
func TestReliabilityStormStraddlingAProvisionalDecision(t *testing.T) {
	s := startOneShot(t, func(c *stormConfig) {
		c.MaxBufferedBytes = pressureBound
		c.DecisionWait, c.RootGrace = "10s", "1s"
	})
	b := newSpanBuilder("pressure/straddle")
	rootID := pcommon.SpanID{0x0f, 0xef}
	content := strings.Repeat("the model read the ledger and wrote this down; ", 480) // about 22 kB
	model := func(i int) {
		b.span("chat gpt-4o", rootID, int64(i*20), int64(i*20+15), map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.output.messages": fmt.Sprintf(`[{"role":"assistant","content":"%d: %s"}]`, i, content),
		})
	}
	for i := range 50 {
		model(i)
	}
	// Each step of the run under a span of its own, which ends before the run does.
	step := b.span("step 1", rootID, 1000, 1030, nil)
	b.genai(step, "charge_card", "call_straddle", `{"amount":42}`, 1010, 1020, nil)
	b.fail("upstream 503")
	for i := 50; i < 400; i++ {
		model(i)
	}
	step = b.span("step 2", rootID, 8290, 8410, nil)
	b.genai(step, "charge_card", "call_straddle", `{"amount":42}`, 8300, 8400, map[string]any{"gen_ai.tool.call.result": `{"ok":true}`})
	b.rootWithID(rootID)
	var requests []ptrace.Traces
	for from := 0; from < b.Spans.Len(); from += 100 {
		to := from + 100
		if to+3 >= b.Spans.Len() {
			to = b.Spans.Len()
		}
		requests = append(requests, b.request(from, to))
		if to == b.Spans.Len() {
			break
		}
	}
	start := time.Now()
	m := s.send(t, requests...)
	records := waitForRecord(t, s.p, s.cfg.SummaryPath, b.traceID(), settleTimeout)
	time.Sleep(500 * time.Millisecond) // a second record of the call would be written by now
	f := readSummaryFile(t, s.cfg.SummaryPath)
	records = f.recordsOf(b.traceID())
	t.Logf("one trace of %d spans in %d requests: early decisions %v, late spans %v, late signals %v, traces %v, calls %v, attempts %v; decided in %s; records %+v",
		b.Spans.Len(), len(requests), m.by(metricEarlyDecisions, "cause"), m.by(metricLateSpans, "decision"),
		m.byPair(metricLateSignals, "cause", "reason"), m.byPair(metricTraces, "decision", "reason"),
		m.sum(metricCalls, nil), m.sum(metricToolAttempts, nil), time.Since(start).Round(time.Millisecond), records)
	id := stormrecord.RecordID(b.traceID(), "call_straddle")
	if n := f.byID[id]; n != 1 {
		t.Errorf("record %s written %d times, want once", id, n)
	}
	i := slices.IndexFunc(records, func(r stormrecord.Record) bool { return r.ID == id })
	if i < 0 {
		t.Fatalf("no record of the call; records of the trace: %+v", records)
	}
	r := records[i]
	if !r.Storm || r.Attempts != 2 || !slices.Equal(r.Statuses, []string{"error", "ok"}) || !r.Partial {
		t.Errorf("record: storm %v, attempts %d, statuses %v, partial %v; want a storm of 2 attempts [error ok], partial",
			r.Storm, r.Attempts, r.Statuses, r.Partial)
	}
	if kinds := findingKinds(r); slices.Contains(kinds, "unrecovered_failure") {
		t.Errorf("record findings %v: the trace shows the call recovered", kinds)
	}
	if n := m.sum(metricTraces, nil); n != 1 {
		t.Errorf("traces = %v, want the one trace counted once", n)
	}
	if n := m.sum(metricCalls, nil); n != 1 {
		t.Errorf("calls = %v, want 1", n)
	}
	if n := m.sum(metricToolAttempts, nil); n != 2 {
		t.Errorf("tool_attempts = %v, want 2", n)
	}
	if n := m.sum(metricLateSignals, map[string]string{"cause": "trace_bytes", "reason": "storm"}); n != 1 {
		t.Errorf("late_signals{cause=trace_bytes,reason=storm} = %v, want 1", n)
	}
	if !strings.Contains(s.p.log(), "a signal arrived after its trace was decided provisionally") {
		t.Error("no log line for the late signal")
	}
	if bt := backendTraces(s.sink)[b.traceID()]; bt == nil || len(bt.spans) != b.Spans.Len() {
		n := 0
		if bt != nil {
			n = len(bt.spans)
		}
		t.Errorf("%d spans of the trace at the backend, want all %d", n, b.Spans.Len())
	}
}
