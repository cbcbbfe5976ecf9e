package retrystormprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
)

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
		for _, s := range buffertest.AllSpans(td) {
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
		h.Consume(td)
	}
	require.NotEmpty(t, prompts, "the capture has model text to redact")
	h.Advance(cfg.DecisionWait + time.Second)
	out := h.Sink.AllTraces()
	require.Empty(t, buffertest.AttrValues(out, "gen_ai.input.messages"), "delete_attributes left the attribute")
	text := buffertest.AllStrings(out)
	for _, p := range prompts {
		require.NotContains(t, text, p, "model text kept with keep_prompt_text: false")
	}
	for _, v := range buffertest.AttrValues(out, "gen_ai.output.messages") {
		require.True(t, gjson.Valid(v))
		require.Contains(t, v, `"role":"assistant"`, "roles stay")
	}
	for _, where := range []string{"tool_span", "message", "configured", "scrubbed"} {
		require.Positive(t, h.Sum("otelcol_processor_retry_storm_redactions", attribute.String("where", where)), where)
	}
}
