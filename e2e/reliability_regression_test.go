//go:build e2e

package e2e

// Regression tests for bugs the reliability tests found and that are fixed; each comment
// says what went wrong before.

import (
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestRegressionOrphanSiblingAttempts: two attempts of one call whose common parent never
// arrived (the root of a long agent run not yet sent, or lost). Tree.Agent makes each
// orphan its own "agent", so splitNestedDuplicates sees the call id under two agents and
// counts the second attempt as a nested duplicate. Expected: one storm of 2 attempts.
func TestRegressionOrphanSiblingAttempts(t *testing.T) {
	s := startOneShot(t, nil)
	b := newSpanBuilder("orphan-siblings")
	missing := pcommon.SpanID{0xaa, 2}
	b.genai(missing, "fetch_url", "call_orphan", `{"url":"https://example.test/b"}`, 10, 50, nil)
	b.fail("timeout")
	b.genai(missing, "fetch_url", "call_orphan", `{"url":"https://example.test/b"}`, 60, 90, nil)
	s.send(t, b.Traces)
	recs := readSummaryFile(t, s.cfg.SummaryPath).recordsOf(b.traceID())
	if len(recs) != 1 || !recs[0].Storm || recs[0].Attempts != 2 {
		t.Errorf("records %+v; want one storm of 2 attempts", recs)
	}
}

// TestRegressionInvalidUTF8ToolNameMetrics: a tool name with invalid UTF-8 becomes a label of
// storm_calls; the Prometheus endpoint then answers 500 for every scrape, for the rest of
// the process's life. Expected: the label is sanitised (or bucketed) and metrics keep
// serving.
func TestRegressionInvalidUTF8ToolNameMetrics(t *testing.T) {
	s := startOneShot(t, nil)
	b := stormTrace("invalid-utf8-tool", "pay\xffnow", `{"a":1}`)
	s.client.mustExport(t, b.Traces)
	waitForRecord(t, s.p, s.cfg.SummaryPath, b.traceID(), settleTimeout)
	if _, err := scrape(s.cfg.MetricsPort); err != nil {
		t.Errorf("metrics after a tool name with invalid UTF-8: %v", err)
	}
}

// TestRegressionInvalidAttemptNumberNotIncomplete: ANALYSIS.md says an invalid attempt
// number (non-integer, zero, negative) makes the attempt incomplete_record when its
// siblings carry valid numbers, but the extractor marks the attempt field present for any
// value, so no finding is raised.
func TestRegressionInvalidAttemptNumberNotIncomplete(t *testing.T) {
	s := startOneShot(t, nil)
	b := newSpanBuilder("invalid-attempt-number")
	root := b.root(1000)
	b.genai(root, "reserve", "call_invalid_attempt", `{"seat":"2B"}`, 10, 20, map[string]any{"attempt": 1})
	b.fail("409")
	b.genai(root, "reserve", "call_invalid_attempt", `{"seat":"2B"}`, 30, 40, map[string]any{"attempt": "abc"})
	s.send(t, b.Traces)
	recs := readSummaryFile(t, s.cfg.SummaryPath).recordsOf(b.traceID())
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	if recs[0].IncompleteAttempts != 1 || !strings.Contains(strings.Join(findingKinds(recs[0]), ","), "incomplete_record") {
		t.Errorf("attempt \"abc\" beside attempt 1: incomplete_attempts %d, findings %v; want 1 and incomplete_record",
			recs[0].IncompleteAttempts, findingKinds(recs[0]))
	}
}

// TestRegressionTokenSumOverflow: token counts are summed in int64 without a bound; two
// attempts of 9223372036854775807 input tokens give tokens_in -2. Expected: never
// negative (saturate, or null as untrusted).
func TestRegressionTokenSumOverflow(t *testing.T) {
	s := startOneShot(t, nil)
	b := newSpanBuilder("token-overflow")
	root := b.root(1000)
	tokens := map[string]any{"gen_ai.usage.input_tokens": int64(math.MaxInt64)}
	b.genai(root, "summarise", "call_tokens", `{}`, 10, 20, tokens)
	b.fail("500")
	b.genai(root, "summarise", "call_tokens", `{}`, 30, 40, tokens)
	s.send(t, b.Traces)
	recs := readSummaryFile(t, s.cfg.SummaryPath).recordsOf(b.traceID())
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	for name, v := range map[string]*int64{"tokens_in": recs[0].TokensIn, "failed_tokens_in": recs[0].FailedTokensIn} {
		if v != nil && *v < 0 {
			t.Errorf("%s = %d: the sum overflowed", name, *v)
		}
	}
}
