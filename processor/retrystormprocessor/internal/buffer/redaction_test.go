package buffer

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
)

// TestRedactionOfRealSDKCaptures sends each trace captured from a real agent SDK
// (testdata/sdk: Vercel AI SDK v7 new and legacy telemetry, Mastra, LangChain.js with
// OpenInference, Strands Agents) through the processor with redaction on, as the SDK sent
// it, and searches everything forwarded for every raw argument and result value the tools
// saw: none may survive, anywhere. The message structures stay readable: they still parse,
// and the tool payloads in them are markers with the payload's hash.
func TestRedactionOfRealSDKCaptures(t *testing.T) {
	names := fixtures.CaptureNames()
	require.NotEmpty(t, names, "no captures in testdata/sdk")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			requests, truth := fixtures.LoadCapture(t, name)
			require.NotEmpty(t, truth.RawValues)
			cfg := testConfig()
			cfg.Sampling.CleanPercent = 100
			h := newHarness(t, cfg, nil)
			sent := spanTexts(requests) // before the processor owns them
			for _, td := range requests {
				h.Consume(td)
			}
			h.Advance(cfg.DecisionWait + time.Second)
			require.NoError(t, h.Shutdown(t.Context()))
			out := h.Sink.AllTraces()
			require.NotEmpty(t, out, "nothing forwarded")
			text := buffertest.AllStrings(out)
			for _, v := range truth.RawValues {
				if strings.Contains(text, v) {
					t.Errorf("raw tool payload %q reached the output at %s", v, whereIs(out, v))
				}
			}
			markers := strings.Count(text, "[redacted:")
			// Copies outside the tool spans, where SDKs write message structures: markers
			// must replace them. Some SDKs write none (VoltAgent, Semantic Kernel, which
			// logs its messages) or no payload at all (the MCP Python SDK's own spans).
			copies, payloads := false, false
			for id, forwarded := range spanTexts(out) {
				for _, v := range truth.RawValues {
					if strings.Contains(sent[id], v) {
						payloads = true
						copies = copies || !strings.Contains(forwarded, "retrystorm.call.key=")
					}
				}
			}
			if markers == 0 && copies {
				t.Error("no payload copy was replaced by a marker: the message structures were not rewritten")
			}
			for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "ai.prompt.messages", "mastra.model_step.output"} {
				for _, v := range buffertest.AttrValues(out, k) {
					if !gjson.Valid(v) {
						t.Errorf("%s no longer parses: %.200s", k, v)
					}
				}
			}
			// What structures the messages stays: no member key was scrubbed, and LangChain's
			// serialization envelope (its tool span records the tool's ToolMessage whole) is
			// not hunted as a payload value, so every copy of it survives.
			for _, scrubbedKey := range []string{`"` + redact.Scrubbed + `":`, `\"` + redact.Scrubbed + `\":`} {
				require.NotContains(t, text, scrubbedKey, "a member key of a message was scrubbed")
			}
			for id, forwarded := range spanTexts(out) {
				if strings.Contains(forwarded, "retrystorm.call.key=") {
					continue // a tool span: its payload attributes are deleted, envelope and all
				}
				for _, word := range []string{`"constructor"`, `"langchain_core"`, `"ToolMessage"`, `"messages"`, `"tool_call_id"`} {
					require.Equal(t, strings.Count(sent[id], word), strings.Count(forwarded, word), "copies of %s in span %s", word, id)
				}
				for _, member := range []string{"id", "tool_call_id", "type", "role"} {
					require.NotContains(t, forwarded, `"`+member+`":"`+redact.Scrubbed+`"`, "span %s", id)
				}
			}
			if payloads {
				require.Positive(t, h.Sum("otelcol_processor_retry_storm_redactions"), "redactions not counted")
			}
			t.Logf("%d raw values searched in %d bytes; %d markers", len(truth.RawValues), len(text), markers)
		})
	}
}

// inPieces returns requests as they are when there are at least n, else their spans cut
// into n requests in the order they were sent, each under a copy of its resource and scope.
func inPieces(requests []ptrace.Traces, n int) []ptrace.Traces {
	if len(requests) >= n {
		return requests
	}
	total := 0
	for _, td := range requests {
		total += td.SpanCount()
	}
	pieces := make([]ptrace.Traces, n)
	for i := range pieces {
		pieces[i] = ptrace.NewTraces()
	}
	k := 0
	for _, td := range requests {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				dst, made := make([]ptrace.SpanSlice, n), make([]bool, n)
				for _, span := range ss.Spans().All() {
					p := k * n / total
					k++
					if !made[p] {
						made[p] = true
						out := pieces[p].ResourceSpans().AppendEmpty()
						rs.Resource().CopyTo(out.Resource())
						oss := out.ScopeSpans().AppendEmpty()
						ss.Scope().CopyTo(oss.Scope())
						dst[p] = oss.Spans()
					}
					span.CopyTo(dst[p].AppendEmpty())
				}
			}
		}
	}
	return pieces
}

// spanTexts is every string of each span of tds (AllStrings of the span alone), by span id.
func spanTexts(tds []ptrace.Traces) map[pcommon.SpanID]string {
	out := map[pcommon.SpanID]string{}
	for _, td := range tds {
		for _, s := range buffertest.AllSpans(td) {
			one := ptrace.NewTraces()
			s.CopyTo(one.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
			out[s.SpanID()] = buffertest.AllStrings([]ptrace.Traces{one})
		}
	}
	return out
}

// TestRedactionOfLateSpansOfRealSDKCaptures decides each capture from all but its last
// request (a capture the SDK sent whole is cut in three, in the order it was sent), then
// sends the last as late spans of the kept trace: what arrives late (the invoke_agent span
// quotes every tool call and response; a late tool span brings payloads of its own) is
// rewritten, and, with every raw value also planted in an attribute nobody lists, scrubbed
// of the payloads the trace's decision remembered.
func TestRedactionOfLateSpansOfRealSDKCaptures(t *testing.T) {
	for _, name := range []string{"vercel_ai_v7_simple", "langchain_openinference", "strands_latest", "mastra"} {
		t.Run(name, func(t *testing.T) {
			requests, truth := fixtures.LoadCapture(t, name)
			requests = inPieces(requests, 3)
			cfg := testConfig()
			cfg.Sampling.CleanPercent = 100
			h := newHarness(t, cfg, nil)
			for _, td := range requests[:len(requests)-1] {
				h.Consume(td)
			}
			h.Advance(cfg.DecisionWait + time.Second)
			require.Positive(t, h.Sink.SpanCount(), "the first pieces were not decided and kept")
			last := requests[len(requests)-1]
			for _, s := range buffertest.AllSpans(last) {
				s.Attributes().PutStr("app.debug.note", "saw "+strings.Join(truth.RawValues, " and "))
			}
			h.Consume(last)
			h.CatchUp()
			require.Equal(t, int64(last.SpanCount()), h.Sum("otelcol_processor_retry_storm_late_spans"))
			text := buffertest.AllStrings(h.Sink.AllTraces())
			for _, v := range truth.RawValues {
				if strings.Contains(text, v) {
					t.Errorf("raw tool payload %q reached the output at %s", v, whereIs(h.Sink.AllTraces(), v))
				}
			}
		})
	}
}

// TestRedactionCopiesSharedResources: a resource that quotes a payload value and is shared
// by two traces of one request is scrubbed for the kept trace's spans only through a copy;
// the other trace's spans still see the resource as it came.
func TestRedactionCopiesSharedResources(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil)
	td := buffertest.ChargeCardTrace(buffertest.TraceID(1), true, false)
	secret := "tok_shared_resource_123"
	args := `{"token":"` + secret + `"}`
	for _, s := range buffertest.AllSpans(td) {
		if _, ok := s.Attributes().Get("gen_ai.tool.call.arguments"); ok {
			s.Attributes().PutStr("gen_ai.tool.call.arguments", args)
		}
	}
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("deployment.note", "built for "+secret)
	h.Consume(td)
	h.Advance(cfg.DecisionWait + time.Second)
	require.NotZero(t, h.Sink.SpanCount())
	require.NotContains(t, buffertest.AllStrings(h.Sink.AllTraces()), secret)
	// The request as the caller sent it still holds the value: only the copy was scrubbed.
	v, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("deployment.note")
	require.Contains(t, v.Str(), secret)
}

// TestRedactionScrubsScopeNames: an instrumentation scope's name and version are strings a
// backend shows like any other; a payload value in them is scrubbed (in the kept trace's
// copy of the scope).
func TestRedactionScrubsScopeNames(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	h := newHarness(t, cfg, nil)
	td := buffertest.ChargeCardTrace(buffertest.TraceID(1), true, false)
	secret := "tok_scope_name_4242"
	for _, s := range buffertest.AllSpans(td) {
		if _, ok := s.Attributes().Get("gen_ai.tool.call.arguments"); ok {
			s.Attributes().PutStr("gen_ai.tool.call.arguments", `{"token":"`+secret+`"}`)
		}
	}
	scope := td.ResourceSpans().At(0).ScopeSpans().At(0).Scope()
	scope.SetName("agent-sdk/" + secret)
	scope.SetVersion(secret)
	h.Consume(td)
	h.Advance(cfg.DecisionWait + time.Second)
	require.NotZero(t, h.Sink.SpanCount())
	for _, out := range h.Sink.AllTraces() {
		for _, rs := range out.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				require.Equal(t, "agent-sdk/[redacted]", ss.Scope().Name())
				require.Equal(t, "[redacted]", ss.Scope().Version())
			}
		}
	}
}

// TestValuesPastMaxHuntedValuesAreCounted: a kept trace whose tool result holds more
// distinct values than max_hunted_values is scrubbed of the first ones (a copy in an
// attribute nobody lists is gone), forwards the rest where they were copied, and counts
// them; late tool spans bringing values past the limit count theirs too, while late spans
// are still scrubbed of the values the decision remembered.
func TestValuesPastMaxHuntedValuesAreCounted(t *testing.T) {
	const notHunted = "otelcol_processor_retry_storm_payload_values_not_hunted"
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 100
	cfg.Redaction.MaxHuntedValues = 4
	h := newHarness(t, cfg, nil)
	rows := []string{"row-value-000001", "row-value-000002", "row-value-000003", "row-value-000004", "row-value-000005", "row-value-000006"}
	id := buffertest.TraceID(1)
	td := buffertest.ChargeCardTrace(id, false)
	for _, s := range buffertest.AllSpans(td) {
		if s.ParentSpanID().IsEmpty() {
			s.Attributes().PutStr("app.debug.note", "rows "+strings.Join(rows, " "))
		} else {
			s.Attributes().PutStr("gen_ai.tool.call.result", `{"rows":["`+strings.Join(rows, `","`)+`"]}`)
		}
	}
	h.Consume(td)
	h.Advance(cfg.DecisionWait + time.Second)
	require.NotZero(t, h.Sink.SpanCount(), "the trace was not kept")
	text := buffertest.AllStrings(h.Sink.AllTraces())
	for _, v := range rows[:4] {
		require.NotContains(t, text, v, "a value within max_hunted_values reached the output")
	}
	for _, v := range rows[4:] {
		require.Contains(t, text, v, "a value past max_hunted_values was scrubbed: the test no longer shows the limit")
	}
	require.Equal(t, int64(2), h.Sum(notHunted))

	late := buffertest.LateAttempt(id, "charge_card", "call-1", 700)
	span := buffertest.AllSpans(late)[0]
	span.Attributes().PutStr("gen_ai.tool.call.result", `["late-value-000007","late-value-000008","late-value-000009"]`)
	span.Attributes().PutStr("app.debug.note", "again "+rows[0]+" and late-value-000007")
	h.Consume(late)
	h.CatchUp()
	require.Equal(t, int64(1), h.Sum("otelcol_processor_retry_storm_late_spans"))
	require.Equal(t, int64(2+3), h.Sum(notHunted), "the late values found the limit reached")
	note := buffertest.AttrValues(h.Sink.AllTraces(), "app.debug.note")
	require.Contains(t, note, "again [redacted] and late-value-000007")
}

// TestKeptDecisionsHoldNoScanIndex: the payload fingerprints a kept decision remembers
// for late spans are kept without the index scrubbing built to scan with (several KB a
// trace), after the trace is decided and after each batch of late spans, with late tool
// spans (new fingerprints merged in) or without (the remembered ones scanned with).
func TestKeptDecisionsHoldNoScanIndex(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.Sampling.CleanPercent = 100
	h := newHarness(t, cfg, nil)
	id := buffertest.TraceID(1)
	td := buffertest.ChargeCardTrace(id, false)
	for _, s := range buffertest.AllSpans(td) {
		if _, ok := s.Attributes().Get("gen_ai.tool.call.arguments"); ok {
			s.Attributes().PutStr("gen_ai.tool.call.arguments", `{"order":"ord-000000000017"}`)
		}
	}
	h.Consume(td)
	h.Advance(cfg.DecisionWait + time.Second)
	remembered := func(when string) {
		t.Helper()
		kd, ok := h.buffer.shards[0].cache.Kept(id)
		require.True(t, ok, "%s: the trace is not in the decision cache as kept", when)
		require.Positive(t, kd.verdict.Payloads.Len(), "%s: no payload remembered", when)
		require.False(t, kd.verdict.Payloads.Indexed(), "%s: the decision cache holds the scan's index", when)
	}
	remembered("decided")

	late := buffertest.Straggler(id)
	late.Span("late note", pcommon.SpanID{1}, 900, 950, map[string]any{"app.debug.note": "order ord-000000000017 again"})
	h.Consume(late.Traces)
	h.CatchUp()
	remembered("late spans without a tool span")

	attempt := buffertest.LateAttempt(id, "charge_card", "call-1", 1000)
	buffertest.AllSpans(attempt)[0].Attributes().PutStr("gen_ai.tool.call.result", `{"receipt":"rcpt-000000000042"}`)
	h.Consume(attempt)
	h.CatchUp()
	remembered("late tool span")
	require.Equal(t, int64(2), h.Sum("otelcol_processor_retry_storm_late_spans"))
	require.NotContains(t, buffertest.AllStrings(h.Sink.AllTraces()), "ord-000000000017")
}

// whereIs names the spans and attributes holding v, for a failure message.
func whereIs(tds []ptrace.Traces, v string) string {
	var at []string
	for _, td := range tds {
		for _, s := range buffertest.AllSpans(td) {
			if strings.Contains(s.Name(), v) || strings.Contains(s.Status().Message(), v) {
				at = append(at, s.Name()+" (name or status)")
			}
			for k, a := range s.Attributes().All() {
				if strings.Contains(a.AsString(), v) {
					at = append(at, s.Name()+" "+k)
				}
			}
			for _, e := range s.Events().All() {
				for k, a := range e.Attributes().All() {
					if strings.Contains(a.AsString(), v) {
						at = append(at, s.Name()+" event "+e.Name()+" "+k)
					}
				}
			}
		}
	}
	if len(at) == 0 {
		return "a resource, scope or link"
	}
	return strings.Join(at, ", ")
}
