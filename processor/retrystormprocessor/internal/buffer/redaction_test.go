package retrystormprocessor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/fixtures"
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
			for _, td := range requests {
				h.consume(td)
			}
			h.advance(cfg.DecisionWait + time.Second)
			require.NoError(t, h.shutdown(t.Context()))
			out := h.sink.AllTraces()
			require.NotEmpty(t, out, "nothing forwarded")
			text := allStrings(out)
			for _, v := range truth.RawValues {
				if strings.Contains(text, v) {
					t.Errorf("raw tool payload %q reached the output at %s", v, whereIs(out, v))
				}
			}
			markers := strings.Count(text, "[redacted:")
			if markers == 0 {
				t.Error("no payload copy was replaced by a marker: the message structures were not rewritten")
			}
			for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "ai.prompt.messages", "mastra.model_step.output"} {
				for _, v := range attrValues(out, k) {
					if !gjson.Valid(v) {
						t.Errorf("%s no longer parses: %.200s", k, v)
					}
				}
			}
			require.Positive(t, h.sum("otelcol_processor_retry_storm_redactions"), "redactions not counted")
			t.Logf("%d raw values searched in %d bytes; %d markers", len(truth.RawValues), len(text), markers)
		})
	}
}

// TestRedactionOfLateSpansOfRealSDKCaptures decides each capture from all but its last
// request, then sends the last as late spans of the kept trace: the root that arrives late
// (the invoke_agent span quotes every tool call and response) is rewritten, and, with every
// raw value also planted in an attribute nobody lists, scrubbed of the payloads the trace's
// decision remembered.
func TestRedactionOfLateSpansOfRealSDKCaptures(t *testing.T) {
	for _, name := range []string{"vercel_ai_v7_simple"} {
		t.Run(name, func(t *testing.T) {
			requests, truth := fixtures.LoadCapture(t, name)
			require.Greater(t, len(requests), 2, "the capture must arrive in pieces")
			cfg := testConfig()
			cfg.Sampling.CleanPercent = 100
			h := newHarness(t, cfg, nil)
			for _, td := range requests[:len(requests)-1] {
				h.consume(td)
			}
			h.advance(cfg.DecisionWait + time.Second)
			require.Positive(t, h.sink.SpanCount(), "the first pieces were not decided and kept")
			last := requests[len(requests)-1]
			for _, s := range allSpans(last) {
				s.Attributes().PutStr("app.debug.note", "saw "+strings.Join(truth.RawValues, " and "))
			}
			h.consume(last)
			h.settle()
			require.Equal(t, int64(last.SpanCount()), h.sum("otelcol_processor_retry_storm_late_spans"))
			text := allStrings(h.sink.AllTraces())
			for _, v := range truth.RawValues {
				if strings.Contains(text, v) {
					t.Errorf("raw tool payload %q reached the output at %s", v, whereIs(h.sink.AllTraces(), v))
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
	td := chargeCardTrace(traceID(1), true, false)
	secret := "tok_shared_resource_123"
	args := `{"token":"` + secret + `"}`
	for _, s := range allSpans(td) {
		if _, ok := s.Attributes().Get("gen_ai.tool.call.arguments"); ok {
			s.Attributes().PutStr("gen_ai.tool.call.arguments", args)
		}
	}
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("deployment.note", "built for "+secret)
	h.consume(td)
	h.advance(cfg.DecisionWait + time.Second)
	require.NotZero(t, h.sink.SpanCount())
	require.NotContains(t, allStrings(h.sink.AllTraces()), secret)
	// The request as the caller sent it still holds the value: only the copy was scrubbed.
	v, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("deployment.note")
	require.Contains(t, v.Str(), secret)
}

func allSpans(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				out = append(out, s)
			}
		}
	}
	return out
}

// allStrings is every string a backend could show of tds: resources, scopes, span names,
// status messages, tracestate, attributes, events and links.
func allStrings(tds []ptrace.Traces) string {
	var b strings.Builder
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			writeStrings(&b, rs.Resource().Attributes())
			for _, ss := range rs.ScopeSpans().All() {
				b.WriteString(ss.Scope().Name() + "\n")
				writeStrings(&b, ss.Scope().Attributes())
				for _, s := range ss.Spans().All() {
					b.WriteString(s.Name() + "\n" + s.Status().Message() + "\n" + s.TraceState().AsRaw() + "\n")
					writeStrings(&b, s.Attributes())
					for _, e := range s.Events().All() {
						b.WriteString(e.Name() + "\n")
						writeStrings(&b, e.Attributes())
					}
					for _, l := range s.Links().All() {
						writeStrings(&b, l.Attributes())
					}
				}
			}
		}
	}
	return b.String()
}

func writeStrings(b *strings.Builder, m pcommon.Map) {
	for k, v := range m.All() {
		b.WriteString(k + "=" + v.AsString() + "\n")
	}
}

// whereIs names the spans and attributes holding v, for a failure message.
func whereIs(tds []ptrace.Traces, v string) string {
	var at []string
	for _, td := range tds {
		for _, s := range allSpans(td) {
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

func attrValues(tds []ptrace.Traces, key string) []string {
	var out []string
	for _, td := range tds {
		for _, s := range allSpans(td) {
			if v, ok := s.Attributes().Get(key); ok {
				out = append(out, v.AsString())
			}
		}
	}
	return out
}

// TestRedactionChoicesFromConfig: delete_attributes removes whole attributes from every
// span, keep_prompt_text: false replaces prompt text while keeping roles and tool names,
// and each kind of redaction is counted by where it happened.
func TestRedactionChoicesFromConfig(t *testing.T) {
	requests, _ := fixtures.LoadCapture(t, "vercel_ai_v7")
	cfg := testConfig()
	cfg.Sampling.CleanPercent = 100
	cfg.Redaction.DeleteAttributes = []string{"gen_ai.input.messages"}
	cfg.Redaction.KeepPromptText = false
	h := newHarness(t, cfg, nil)
	var prompts []string
	for _, td := range requests {
		for _, s := range allSpans(td) {
			if v, ok := s.Attributes().Get("gen_ai.output.messages"); ok {
				gjson.Parse(v.Str()).ForEach(func(_, m gjson.Result) bool {
					for _, p := range m.Get("parts").Array() {
						if p.Get("type").Str == "text" && len(p.Get("content").Str) > 12 {
							prompts = append(prompts, p.Get("content").Str)
						}
					}
					return true
				})
			}
		}
		h.consume(td)
	}
	require.NotEmpty(t, prompts, "the capture has model text to redact")
	h.advance(cfg.DecisionWait + time.Second)
	out := h.sink.AllTraces()
	require.Empty(t, attrValues(out, "gen_ai.input.messages"), "delete_attributes left the attribute")
	text := allStrings(out)
	for _, p := range prompts {
		require.NotContains(t, text, p, "model text kept with keep_prompt_text: false")
	}
	for _, v := range attrValues(out, "gen_ai.output.messages") {
		require.True(t, gjson.Valid(v))
		require.Contains(t, v, `"role":"assistant"`, "roles stay")
	}
	for _, where := range []string{"tool_span", "message", "configured", "scrubbed"} {
		require.Positive(t, h.sum("otelcol_processor_retry_storm_redactions", attribute.String("where", where)), where)
	}
}
