//go:build e2e

package e2e

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// hostileCase is one hostile input: the requests that carry it and what must come out.
type hostileCase struct {
	name     string
	trace    *spanBuilder
	requests []ptrace.Traces
	// check holds the case's records and backend spans to ANALYSIS.md "Hostile input".
	check func(t *testing.T, recs []stormrecord.Record, backend *backendTrace)
}

const (
	mib          = 1 << 20
	hugeSpans    = 100_000
	manyAttempts = 10_000
)

// TestReliabilityHostileInput sends hostile traces through the collector's OTLP receiver:
// 1 MiB attribute values, a request over the receiver's limit, a 100k-span trace in ten
// requests, one call with 10,000 attempts, parent cycles and self-parents, duplicate span
// ids, invalid UTF-8, NaN and huge numbers, attempt values -1, 9223372036854775807 and
// "abc", and absurd timestamps. Each is handled as ANALYSIS.md "Hostile input" documents,
// nothing crashes or stalls, and a normal storm trace sent afterwards is decided as usual.
func TestReliabilityHostileInput(t *testing.T) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.DecisionWait, cfg.RootGrace = "4s", "500ms"
	// The backend accepts requests up to 64 MiB: a 100k-span trace leaves retry_storm in
	// one request (see TestReliabilityLargeTraceReachesDefaultBackend for a backend with
	// the usual 4 MiB limit).
	sink := &startFaultyBackend(t, cfg.BackendPort).sink
	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)

	cases := []hostileCase{
		hugeValues(), hugeTrace(), manyAttemptsCase(), cycles(), duplicateIDs(),
		invalidUTF8(), nanAndHuge(), attemptValues(), absurdTimes(),
	}
	start := time.Now()
	spans := 0
	for _, c := range cases {
		for _, td := range c.requests {
			spans += td.SpanCount()
			if err := client.export(td); err != nil {
				t.Fatalf("case %s: export %d spans: %v", c.name, td.SpanCount(), err)
			}
		}
	}
	t.Logf("sent %d hostile spans in %s", spans, time.Since(start).Round(time.Millisecond))

	t.Run("request over the receiver limit", func(t *testing.T) {
		b := newSpanBuilder("hostile-oversized")
		b.span("oversized", pcommon.SpanID{}, 0, 1, map[string]any{"blob": strings.Repeat("z", 5*mib)})
		err := client.export(b.Traces)
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("a 5 MiB request: %v, want RESOURCE_EXHAUSTED from the receiver's 4 MiB limit", err)
		}
	})

	waitSettled(t, p, cfg.MetricsPort, spans)
	m := waitBackendDrained(t, p, cfg.MetricsPort)
	t.Logf("every hostile trace decided %s after the first request; %v", time.Since(start).Round(time.Millisecond),
		m.byPair(metricTraces, "decision", "reason"))
	p.alive(t)
	f := readSummaryFile(t, cfg.SummaryPath)
	if !utf8.Valid(f.raw) {
		t.Error("the summary file is not valid UTF-8")
	}
	backend := backendTraces(sink)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, f.recordsOf(c.trace.traceID()), backend[c.trace.traceID()])
		})
	}

	t.Run("serves afterwards", func(t *testing.T) {
		canary := stormTrace("hostile-canary", "lookup_customer", `{"id":"c-9"}`)
		client.mustExport(t, canary.Traces)
		recs := waitForRecord(t, p, cfg.SummaryPath, canary.traceID(), settleTimeout)
		if len(recs) != 1 || recs[0].Attempts != 2 {
			t.Errorf("canary records %+v, want one storm of 2 attempts", recs)
		}
		m := waitSettled(t, p, cfg.MetricsPort, spans+canary.Traces.SpanCount())
		if r, f, d, b, ok := accounted(m); !ok {
			t.Errorf("spans received %d != forwarded %d + dropped %d + buffered %d", r, f, d, b)
		}
	})
}

// oneRecord fails unless recs holds exactly one record and returns it.
func oneRecord(t *testing.T, recs []stormrecord.Record) stormrecord.Record {
	t.Helper()
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1: %+v", len(recs), recs)
	}
	return recs[0]
}

func findingKinds(r stormrecord.Record) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Kind)
	}
	return out
}

func wantStorm(t *testing.T, r stormrecord.Record, attempts int, class string) {
	t.Helper()
	if !r.Storm || r.Attempts != attempts || r.Class == nil || *r.Class != class {
		t.Errorf("record storm=%v attempts=%d class=%v, want a %s storm of %d attempts", r.Storm, r.Attempts, deref(r.Class), class, attempts)
	}
}

// wantWhole fails unless the backend holds n spans of the trace.
func wantWhole(t *testing.T, bt *backendTrace, n int) {
	t.Helper()
	if bt == nil {
		t.Fatalf("the trace never reached the backend")
	}
	if len(bt.spans) != n {
		t.Errorf("the backend holds %d spans of the trace, %d were sent", len(bt.spans), n)
	}
}

// hugeValues: 1 MiB argument values on two attempts and a 1 MiB attribute on the root.
// Documented: very large values are hashed, never copied into annotations; payloads are
// redacted; other attributes pass through untouched.
func hugeValues() hostileCase {
	b := newSpanBuilder("hostile-huge-values")
	root := b.root(1000)
	b.last().Attributes().PutStr("note", strings.Repeat("n", mib))
	args := `{"blob":"` + strings.Repeat("A", mib) + `"}`
	b.genai(root, "upload_blob", "call_huge", args, 10, 100, nil)
	b.fail("upstream 503")
	b.genai(root, "upload_blob", "call_huge", args, 200, 300, map[string]any{
		"gen_ai.tool.call.result": `{"stored":"` + strings.Repeat("R", mib/2) + `"}`})
	return hostileCase{name: "1 MiB attribute values", trace: b, requests: []ptrace.Traces{b.Traces},
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			r := oneRecord(t, recs)
			wantStorm(t, r, 2, "transient_dependency")
			wantWhole(t, bt, 3)
			for id, span := range bt.spans {
				for _, key := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
					if _, ok := span.Attributes().Get(key); ok {
						t.Errorf("span %s reached the backend with its 1 MiB %s", id, key)
					}
				}
				if summary := strAttr(span, stormrecord.AttrCallSummary); len(summary) > 16<<10 {
					t.Errorf("span %s: call summary of %d bytes: a large value was copied", id, len(summary))
				}
			}
			if got := len(strAttr(bt.root, "note")); got != mib {
				t.Errorf("the root's 1 MiB note arrived with %d bytes; attributes other than payloads pass through", got)
			}
		}}
}

// hugeTrace: 100,000 spans in ten requests of 10,000, the root last, with one storm inside.
// Documented: walks are bounded by the span count; the trace is decided once, whole.
func hugeTrace() hostileCase {
	b := newSpanBuilder("hostile-100k-spans")
	root := pcommon.SpanID{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1}
	b.genai(root, "search_docs", "call_big", `{"q":"x"}`, 10, 20, nil)
	b.fail("timeout")
	b.genai(root, "search_docs", "call_big", `{"q":"x"}`, 30, 40, nil)
	for b.Spans.Len() < hugeSpans-1 {
		b.span("chat model", root, 50, 60, map[string]any{"gen_ai.operation.name": "chat"})
	}
	b.rootWithID(root)
	var requests []ptrace.Traces
	for from := 0; from < hugeSpans; from += 10_000 {
		requests = append(requests, b.request(from, min(from+10_000, hugeSpans)))
	}
	return hostileCase{name: "100k-span trace", trace: b, requests: requests,
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			wantStorm(t, oneRecord(t, recs), 2, "transient_dependency")
			wantWhole(t, bt, hugeSpans)
		}}
}

// manyAttemptsCase: one call with 10,000 attempts (the per-attempt record).
func manyAttemptsCase() hostileCase {
	b := newSpanBuilder("hostile-10k-attempts")
	root := b.root(20_000)
	for i := range manyAttempts {
		b.span("pay", root, int64(i), int64(i+1), map[string]any{
			"tool_name": "pay", "span_id": "s1", "attempt": i + 1, "status": "error", "run_id": "run-1"})
	}
	return hostileCase{name: "10,000 attempts of one call", trace: b, requests: []ptrace.Traces{b.Traces},
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			r := oneRecord(t, recs)
			wantStorm(t, r, manyAttempts, "exhausted")
			if len(r.Statuses) != manyAttempts || len(r.AttemptSpanIDs) != manyAttempts {
				t.Errorf("statuses %d, attempt span ids %d, want %d each", len(r.Statuses), len(r.AttemptSpanIDs), manyAttempts)
			}
			wantWhole(t, bt, manyAttempts+1)
		}}
}

// cycles: a parent cycle (A→B→A) holding a failed and a successful attempt of one call, and
// a self-parented attempt. Documented: cycles are cut at the link that closes them (here
// B→A, found first), self-parents become roots. After the cut A sits under B, so B is A's
// logical tool span (grouping rule 1): one call of one attempt, A, which failed; with no
// agent span above, the top of A's chain (B) stands in for the agent, hence
// unrecovered_failure. The self-parented attempt is a single ok call: no record.
func cycles() hostileCase {
	b := newSpanBuilder("hostile-cycles")
	b.root(1000)
	a := b.genai(pcommon.SpanID{}, "lookup_order", "call_cycle", `{"o":1}`, 10, 20, nil)
	b.fail("boom")
	bID := b.genai(a, "lookup_order", "call_cycle", `{"o":1}`, 30, 40, nil)
	b.Spans.At(1).SetParentSpanID(bID)
	self := b.genai(pcommon.SpanID{}, "lookup_order", "call_self", `{"o":2}`, 50, 60, nil)
	b.last().SetParentSpanID(self)
	return hostileCase{name: "parent cycles and self-parents", trace: b, requests: []ptrace.Traces{b.Traces},
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			r := oneRecord(t, recs)
			if r.CallKey != "call_cycle" || r.Attempts != 1 || strings.Join(r.AttemptSpanIDs, ",") != a.String() ||
				strings.Join(findingKinds(r), ",") != "unrecovered_failure" {
				t.Errorf("record %s: %d attempts %v, findings %v; want call_cycle, 1 attempt %s, unrecovered_failure",
					r.CallKey, r.Attempts, r.AttemptSpanIDs, findingKinds(r), a)
			}
			wantWhole(t, bt, 4)
		}}
}

// duplicateIDs: two attempts of one call share a span id. Documented: duplicate ids are
// counted and both spans count as attempts.
func duplicateIDs() hostileCase {
	b := newSpanBuilder("hostile-duplicate-ids")
	root := b.root(1000)
	first := b.genai(root, "send_email", "call_dup", `{"to":"a"}`, 10, 20, nil)
	b.fail("smtp 421")
	b.genai(root, "send_email", "call_dup", `{"to":"a"}`, 30, 40, nil)
	b.last().SetSpanID(first)
	return hostileCase{name: "duplicate span ids", trace: b, requests: []ptrace.Traces{b.Traces},
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			r := oneRecord(t, recs)
			wantStorm(t, r, 2, "transient_dependency")
			if len(r.AttemptSpanIDs) != 2 || r.AttemptSpanIDs[0] != r.AttemptSpanIDs[1] {
				t.Errorf("attempt span ids %v, want the shared id twice", r.AttemptSpanIDs)
			}
			if bt == nil {
				t.Fatal("the trace never reached the backend")
			}
		}}
}

// invalidUTF8: call id, run id, arguments and status message with invalid UTF-8.
// Documented: invalid UTF-8 becomes U+FFFD in hashes and records; spans pass as sent. (An
// invalid tool name once broke the metrics endpoint: TestRegressionInvalidUTF8ToolNameMetrics.)
func invalidUTF8() hostileCase {
	b := newSpanBuilder("hostile-invalid-utf8")
	root := b.root(1000)
	extra := map[string]any{"run_id": "run-\xff"}
	b.genai(root, "pay_now", "call_\xfe\xff", "{\"acct\":\"\xff\xfe\"}", 10, 20, extra)
	b.fail("bad \xff byte")
	b.genai(root, "pay_now", "call_\xfe\xff", "{\"acct\":\"\xff\xfe\"}", 30, 40, extra)
	return hostileCase{name: "invalid UTF-8", trace: b, requests: []ptrace.Traces{b.Traces},
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			r := oneRecord(t, recs)
			wantStorm(t, r, 2, "transient_dependency")
			if r.CallKey != "call_\ufffd\ufffd" || r.RunID == nil || *r.RunID != "run-\ufffd" {
				t.Errorf("record call key %q run id %v, want invalid bytes as U+FFFD", r.CallKey, deref(r.RunID))
			}
			wantWhole(t, bt, 3)
		}}
}

// nanAndHuge: token counts and attempt numbers that are NaN, infinite, negative or beyond
// 2^53. Documented: a count that is not a non-negative integer is not read (null, never a
// made-up zero); such attempt numbers are invalid and the attempts are ordered by start.
func nanAndHuge() hostileCase {
	b := newSpanBuilder("hostile-nan-huge")
	root := b.root(1000)
	b.genai(root, "quote", "call_nan", `{"sku":1}`, 10, 20, map[string]any{
		"attempt": math.NaN(), "gen_ai.usage.input_tokens": math.NaN(), "gen_ai.usage.output_tokens": -5})
	b.fail("boom")
	b.genai(root, "quote", "call_nan", `{"sku":1}`, 30, 40, map[string]any{
		"attempt": math.Inf(1), "gen_ai.usage.input_tokens": 1e308, "gen_ai.usage.output_tokens": math.Inf(-1),
		"price": math.NaN(), "big": 1e308})
	return hostileCase{name: "NaN and huge numbers", trace: b, requests: []ptrace.Traces{b.Traces},
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			r := oneRecord(t, recs)
			wantStorm(t, r, 2, "transient_dependency")
			if r.TokensIn != nil || r.TokensOut != nil {
				t.Errorf("tokens in %v out %v from NaN, ±Inf, -5 and 1e308; want null", deref(r.TokensIn), deref(r.TokensOut))
			}
			if strings.Join(r.Statuses, ",") != "error,ok" {
				t.Errorf("statuses %v, want start-time order error,ok", r.Statuses)
			}
			wantWhole(t, bt, 3)
			for _, span := range bt.spans {
				if v, ok := span.Attributes().Get("price"); ok && !math.IsNaN(v.Double()) {
					t.Errorf("NaN attribute arrived as %v", v.AsRaw())
				}
			}
		}}
}

// attemptValues: attempt numbers -1, 9223372036854775807 and "abc" on one call.
// Documented: -1 and "abc" are invalid, so the call is ordered by start time; the valid
// numbers ([9223372036854775807]) skip 1: attempt_gap. (ANALYSIS.md also promises
// incomplete_record for the invalid ones: TestRegressionInvalidAttemptNumberNotIncomplete.)
func attemptValues() hostileCase {
	b := newSpanBuilder("hostile-attempt-values")
	root := b.root(1000)
	for i, v := range []any{-1, int64(math.MaxInt64), "abc"} {
		b.genai(root, "reserve", "call_attempts", `{"seat":"1A"}`, int64(10+20*i), int64(20+20*i), map[string]any{"attempt": v})
		if i < 2 {
			b.fail("409 conflict")
		}
	}
	return hostileCase{name: "attempt values -1, MaxInt64, abc", trace: b, requests: []ptrace.Traces{b.Traces},
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			r := oneRecord(t, recs)
			wantStorm(t, r, 3, "transient_dependency")
			if kinds := strings.Join(findingKinds(r), ","); !strings.Contains(kinds, "attempt_gap") {
				t.Errorf("findings %s, want attempt_gap", kinds)
			}
			if strings.Join(r.Statuses, ",") != "error,error,ok" {
				t.Errorf("statuses %v, want start-time order error,error,ok", r.Statuses)
			}
			wantWhole(t, bt, 4)
		}}
}

// absurdTimes: an attempt that ends before it starts, one that starts at 0 and ends at the
// largest timestamp. Documented here: durations never go negative.
func absurdTimes() hostileCase {
	b := newSpanBuilder("hostile-absurd-times")
	root := b.root(1000)
	b.genai(root, "sync", "call_time", `{}`, 500, 10, nil)
	b.fail("boom")
	b.genai(root, "sync", "call_time", `{}`, 600, 700, nil)
	b.last().SetStartTimestamp(0)
	b.last().SetEndTimestamp(pcommon.Timestamp(math.MaxUint64))
	return hostileCase{name: "absurd timestamps", trace: b, requests: []ptrace.Traces{b.Traces},
		check: func(t *testing.T, recs []stormrecord.Record, bt *backendTrace) {
			r := oneRecord(t, recs)
			if r.Attempts != 2 {
				t.Errorf("attempts %d, want 2", r.Attempts)
			}
			if r.MS < 0 {
				t.Errorf("ms %d is negative", r.MS)
			}
			for _, a := range r.Timeline {
				if a.DurationMS < 0 || a.StartMSOffset < 0 {
					t.Errorf("timeline entry %+v is negative", a)
				}
			}
			wantWhole(t, bt, 3)
		}}
}

// TestReliabilityLargeTraceReachesDefaultBackend: OTLP receivers (the collector, Jaeger,
// Tempo) accept 4 MiB per request by default; retry_storm forwards kept spans in requests of
// at most 2048 spans (TestRegressionLargeKeptTraceExceedsBackendLimit), and a batch
// processor after it that caps requests (send_batch_max_size: 4096) keeps that bound: a
// kept 100k-span trace reaches such a backend whole.
func TestReliabilityLargeTraceReachesDefaultBackend(t *testing.T) {
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.BatchMaxSize = 4096
	sink := startBackend(t, cfg.BackendPort)
	p := startStormCollector(t, dir, cfg)
	client := dialOTLP(t, cfg.OTLPPort)
	c := hugeTrace()
	for _, td := range c.requests {
		client.mustExport(t, td)
	}
	waitSettled(t, p, cfg.MetricsPort, hugeSpans)
	m := waitBackendDrained(t, p, cfg.MetricsPort)
	perTrace, perSpan := spanCounts(sink)
	if got := perTrace[c.trace.traceID()]; got != hugeSpans || len(perSpan) != hugeSpans {
		t.Errorf("%d spans of the 100k-span trace (%d distinct) reached a 4 MiB backend, %v given up",
			got, len(perSpan), m.sum(metricSendFailed, nil))
	}
	c.check(t, readSummaryFile(t, cfg.SummaryPath).recordsOf(c.trace.traceID()), backendTraces(sink)[c.trace.traceID()])
}
