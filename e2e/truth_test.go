//go:build e2e

package e2e

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// readTruth reads agentsim's --truth file.
func readTruth(t *testing.T, path string) []agenttraffic.Truth {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open truth: %v", err)
	}
	defer f.Close()
	var out []agenttraffic.Truth
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var tr agenttraffic.Truth
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil {
			t.Fatalf("truth line %d: %v", len(out)+1, err)
		}
		out = append(out, tr)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read truth: %v", err)
	}
	return out
}

// unbackedCitations is how many unbacked_citation findings the truth injected into a trace.
// agentsim cites assets on the root span only, so a trace with any has one finding record.
func unbackedCitations(tr *agenttraffic.Truth) int {
	n := 0
	for _, f := range tr.Findings {
		if f == agenttraffic.FindingUnbackedCitation {
			n++
		}
	}
	return n
}

// cleanThreshold is the threshold retry_storm derives from clean_percent: OpenTelemetry
// consistent probability sampling with 4 significant hex digits, as its internal/sample
// package does (which is internal to the processor, so the rule is restated here).
func cleanThreshold(t *testing.T, percent float64) sampling.Threshold {
	t.Helper()
	switch percent {
	case 0:
		return sampling.NeverSampleThreshold
	case 100:
		return sampling.AlwaysSampleThreshold
	}
	th, err := sampling.ProbabilityToThresholdWithPrecision(max(percent/100, sampling.MinSamplingProbability), 4)
	if err != nil {
		t.Fatalf("threshold of %v%%: %v", percent, err)
	}
	return th
}

// keepsClean reports whether a clean trace with this id passes th. agentsim sends no
// tracestate, so the randomness is the trace id's.
func keepsClean(t *testing.T, th sampling.Threshold, traceID string) bool {
	t.Helper()
	b, err := hex.DecodeString(traceID)
	if err != nil || len(b) != 16 {
		t.Fatalf("trace id %q is not 16 hex bytes", traceID)
	}
	return th != sampling.NeverSampleThreshold && th.ShouldSample(sampling.TraceIDToRandomness(pcommon.TraceID(b)))
}

// isErrorResult matches a result JSON flagging a tool error: `"isError": true` or
// `"is_error": true`, also inside a JSON string.
var isErrorResult = regexp.MustCompile(`\\?"(isError|is_error)\\?"\s*:\s*true`)

// sentIsError reports whether the span as sent said its tool failed: an isError result in
// any attribute, or the tool's own failure report in gen_ai.tool.status (the default
// attributes.tool_status source agentsim's Strands shape writes).
func sentIsError(s *agenttraffic.Span) bool {
	for _, a := range s.Attrs {
		if a.Key == "gen_ai.tool.status" && a.Value.Kind == agenttraffic.ValueString && strings.EqualFold(strings.TrimSpace(a.Value.Str), "error") {
			return true
		}
		if a.Value.Kind == agenttraffic.ValueString && isErrorResult.MatchString(a.Value.Str) ||
			a.Value.Kind == agenttraffic.ValueMap && isErrorResult.MatchString(a.Value.JSON()) {
			return true
		}
	}
	return false
}
