//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
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

// readSummaries reads the storm_summary file: the storm records (finding records are
// read by readFindingRecords) and the raw bytes.
//
// The records are those a reader sees: of the lines of one id (a trace decided in two
// parts, a finding found after its trace was forwarded) the most complete, in the place of
// the first. Each later line of an id must be more complete than the one before it, which
// is when storm_summary writes one.
func readSummaries(t *testing.T, path string) ([]stormrecord.Record, []byte) {
	t.Helper()
	var out []stormrecord.Record
	at := map[string]int{}
	raw := scanSummaries(t, path, func(line []byte) {
		var r stormrecord.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("summary line %q is not a storm record: %v", line, err)
		}
		i, seen := at[r.ID]
		switch {
		case !seen:
			at[r.ID] = len(out)
			out = append(out, r)
		case r.Completeness().Beats(out[i].Completeness()):
			out[i] = r
		default:
			t.Errorf("record %s (trace %s, call %s) written again though no more complete: %+v after %+v",
				r.ID, r.TraceID, r.CallKey, r.Completeness(), out[i].Completeness())
		}
	}, nil)
	return out, raw
}

// readFindingRecords reads the finding records (retrystorm.finding/v1) of the
// storm_summary file.
func readFindingRecords(t *testing.T, path string) []stormrecord.FindingRecord {
	t.Helper()
	var out []stormrecord.FindingRecord
	scanSummaries(t, path, nil, func(line []byte) {
		var r stormrecord.FindingRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("summary line %q is not a finding record: %v", line, err)
		}
		out = append(out, r)
	})
	return out
}

// scanSummaries hands each line of the summary file to storm or finding by its schema and
// fails on a line of neither; it returns the raw bytes.
func scanSummaries(t *testing.T, path string, storm, finding func([]byte)) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read storm summary file: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		var head struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
			t.Fatalf("summary line %d is not a record: %v\n%s", n, err, sc.Text())
		}
		switch {
		case head.Schema == stormrecord.FindingSchema && finding != nil:
			finding(sc.Bytes())
		case head.Schema == stormrecord.FindingSchema:
		case storm != nil:
			storm(sc.Bytes()) // checkSummaries reports a wrong schema
		}
	}
	return raw
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

// regenerate replays agentsim's generator for the flags the test passed (--seed,
// --every-scenario, --count, --rate 0, defaults otherwise), so the test knows every span as
// it was sent. The generator is deterministic for a config; the trace ids are checked
// against the truth file to prove the two agree.
func regenerate(t *testing.T, seed uint64, count int, truth []agenttraffic.Truth) map[string]*agenttraffic.Trace {
	t.Helper()
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{
		Seed: seed, EveryScenario: true, Interval: 10 * time.Millisecond, Service: agentService,
		Base: time.Now().Add(-time.Minute),
	})
	if err != nil {
		t.Fatalf("regenerate agent traffic: %v", err)
	}
	traces := gen.Generate(count)
	if len(traces) != len(truth) {
		t.Fatalf("regenerated %d traces, agentsim's truth has %d", len(traces), len(truth))
	}
	out := make(map[string]*agenttraffic.Trace, len(traces))
	for i := range traces {
		if id := traces[i].ID.String(); id != truth[i].TraceID {
			t.Fatalf("regenerated trace %d is %s, agentsim sent %s: the generator config differs from agentsim's", i, id, truth[i].TraceID)
		}
		out[traces[i].ID.String()] = &traces[i]
	}
	return out
}

// cleanThreshold is the threshold retry_storm derives from clean_percent: OpenTelemetry
// consistent probability sampling with 4 significant hex digits, as its internal/decision
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

// sentIsError reports whether the span as sent carried an isError result in any attribute.
func sentIsError(s *agenttraffic.Span) bool {
	for _, a := range s.Attrs {
		if a.Value.Kind == agenttraffic.ValueString && isErrorResult.MatchString(a.Value.Str) ||
			a.Value.Kind == agenttraffic.ValueMap && isErrorResult.MatchString(a.Value.JSON()) {
			return true
		}
	}
	return false
}
