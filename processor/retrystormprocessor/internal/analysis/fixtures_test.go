package analysis

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// wantUnit is a storm or record-bearing unit expected from a fixture (testdata/README.md).
type wantUnit struct {
	key      string // exact key, or "fallback:" prefix
	tool     string
	statuses []string
	storm    bool
	class    string
	layer    stormrecord.Layer
	layers   stormrecord.Layers
}

func TestFixturesOfEveryInputShape(t *testing.T) {
	cases := []struct {
		file     string
		calls    int
		degraded int
		units    []wantUnit // units that produce a record, in start order
		findings []string
		clean    bool
	}{
		{file: "genai_semconv.json", calls: 2, units: []wantUnit{{"call_Vq3kP8mZr1tXo2Lw9bYdA4Hs", "get_weather", []string{"error", "ok"}, true, "transient_dependency", "agent", stormrecord.Layers{Executor: 2, Agent: 2}}}},
		{file: "mastra.json", calls: 1, units: []wantUnit{{"call_Hk2Wq9Zt4Lm7Xc1Vb8Nd3Rf6", "lookup_ticket", []string{"error", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Executor: 2, Agent: 1}}}},
		{file: "mcp_semconv.json", calls: 1, units: []wantUnit{{"toolu_01Nq7vXb3KcRe8TzW4mLp2Ha", "search_docs", []string{"error", "error", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Transport: 4, Executor: 3, Agent: 1}}}},
		{file: "mcp_fallback.json", calls: 1, degraded: 1, units: []wantUnit{{"fallback:", "read_file", []string{"error", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Executor: 2, Agent: 1}}}},
		{file: "openllmetry_mcp.json", calls: 1, degraded: 1, units: []wantUnit{{"fallback:", "get_forecast", []string{"timeout", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Executor: 2, Agent: 1}}}},
		{file: "openinference.json", calls: 2, units: []wantUnit{
			{"call_Tz4Bq8Nw1Xk6Lc3Vm9Rp2Hd7", "check_inventory", []string{"error", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Executor: 2, Agent: 1}},
			{"call_Gm6Yd2Kp9Wv3Qs8Bx1Lt5Ne0", "reserve_stock", []string{"error", "error"}, true, "exhausted", "executor", stormrecord.Layers{Executor: 2, Agent: 1}},
		}, findings: []string{"unrecovered_failure"}},
		{file: "vercel_v6.json", calls: 2, clean: true},
		{file: "claude_code.json", calls: 1, units: []wantUnit{{"toolu_01JdN4sQx8Wc2Rk7Lb5Vm3Ty", "WebFetch", []string{"error", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Executor: 2, Agent: 1}}}},
		{file: "logfire_mcp.json", calls: 1, degraded: 1, units: []wantUnit{{"fallback:", "lookup_order", []string{"error", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Executor: 2, Agent: 1}}}},
		{file: "attempt_record.json", calls: 1, units: []wantUnit{{"span_19", "charge_card", []string{"timeout", "error", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Executor: 3, Agent: 1}}}},
		{file: "mixed_agent_many_tools.json", calls: 8, units: []wantUnit{{"call_Ho1Ui7Op0As3Df6Gh9Jk2Lz", "search_hotels", []string{"error", "error", "ok"}, true, "changed_arguments", "executor", stormrecord.Layers{Executor: 3, Agent: 1}}}},
		{file: "mixed_nested_mcp_http.json", calls: 2, units: []wantUnit{{"toolu_01Rk8Vw2Ny5Hq9Tc3Ld7Ms4Bx", "query_incidents", []string{"error", "ok"}, true, "transient_dependency", "executor", stormrecord.Layers{Transport: 4, Executor: 2, Agent: 1}}}},
		{file: "mixed_subagent_duplicate.json", calls: 2, units: []wantUnit{{"toolu_01X", "transfer_funds", []string{"ok"}, false, "", "none", stormrecord.Layers{Executor: 1, Agent: 1}}}, findings: []string{"nested_duplicate"}},
		{file: "mixed_duplicate_side_effect.json", calls: 1, units: []wantUnit{{"call_6Rk2Tq8wLm3Zp0Yx4Vb7Nc1D", "charge_card", []string{"ok", "ok"}, true, "duplicate_side_effect", "executor", stormrecord.Layers{Transport: 2, Executor: 2, Agent: 1}}}, findings: []string{"duplicate_side_effect", "result_drift"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tr := New(DefaultConfig(), nil, nil).Analyze(fixtures.Load(t, c.file))
			assert.Equal(t, c.calls, tr.Calls, "logical calls")
			assert.Equal(t, c.degraded, tr.DegradedCalls, "fallback-keyed calls")
			var got []*stormrecord.Record
			for _, u := range tr.Units {
				if u.Record != nil {
					got = append(got, u.Record)
				}
			}
			require.Len(t, got, len(c.units), "records")
			for i, w := range c.units {
				r := got[i]
				if strings.HasSuffix(w.key, ":") {
					assert.True(t, strings.HasPrefix(r.CallKey, w.key), r.CallKey)
				} else {
					assert.Equal(t, w.key, r.CallKey)
				}
				assert.Equal(t, w.tool, r.ToolName)
				assert.Equal(t, w.statuses, r.Statuses)
				assert.Equal(t, w.storm, r.Storm)
				assert.Equal(t, w.class, deref(r.Class))
				assert.Equal(t, w.layer, r.Layer)
				assert.Equal(t, w.layers, r.Layers)
			}
			kinds := allKinds(tr)
			slices.Sort(kinds)
			want := slices.Clone(c.findings)
			slices.Sort(want)
			assert.Equal(t, want, kinds, "findings")
			assert.Equal(t, c.clean, tr.Signals.Clean())
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// What real SDKs do that the analysis must survive (testdata/README.md), each on its fixture.
func TestRealSDKBehaviours(t *testing.T) {
	an := New(DefaultConfig(), nil, nil)
	t.Run("unset and ok successes are both ok", func(t *testing.T) {
		unset := an.Analyze(fixtures.Load(t, "vercel_v6.json"))
		ok := an.Analyze(fixtures.Load(t, "mastra.json"))
		assert.Equal(t, "ok", unset.Units[0].Last().Status.String())
		assert.Equal(t, ptrace.StatusCodeUnset, unset.Units[0].Last().Span.Status().Code())
		assert.Equal(t, "ok", ok.Units[0].Last().Status.String())
		assert.Equal(t, ptrace.StatusCodeOk, ok.Units[0].Last().Span.Status().Code())
	})
	t.Run("isError under unset status is an error with the change planned", func(t *testing.T) {
		tr := an.Analyze(fixtures.Load(t, "logfire_mcp.json"))
		first := tr.Units[0].Attempts()[0]
		assert.Equal(t, "error", first.Status.String())
		require.NotNil(t, first.Remap)
		assert.True(t, first.Remap.SetErrorType)
		assert.Equal(t, "order service unavailable", first.Remap.Description)
	})
	t.Run("an attempt that already has error.type keeps it", func(t *testing.T) {
		tr := an.Analyze(fixtures.Load(t, "mcp_semconv.json"))
		first := tr.Units[0].Attempts()[0]
		assert.Equal(t, "error", first.Status.String())
		assert.Nil(t, first.Remap, "error.type=tool_error with unset status and no result: nothing to remap")
	})
	t.Run("green root over a failed last attempt", func(t *testing.T) {
		tr := an.Analyze(fixtures.Load(t, "openinference.json"))
		assert.Contains(t, allKinds(tr), "unrecovered_failure")
	})
}
