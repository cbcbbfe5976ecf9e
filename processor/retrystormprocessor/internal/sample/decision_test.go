package sample

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// idWithRandomness returns a trace id whose consistent-sampling randomness is r (56 bits).
func idWithRandomness(r uint64) pcommon.TraceID {
	var id pcommon.TraceID
	for i := range 7 {
		id[15-i] = byte(r >> (8 * i))
	}
	return id
}

func th(t *testing.T, tvalue string) sampling.Threshold {
	t.Helper()
	out, err := sampling.TValueToThreshold(tvalue)
	require.NoError(t, err)
	return out
}

// rates are the default rates but for a clean rate, tool overrides and whether tracestate
// randomness is read.
func rates(clean float64, tools map[string]ToolConfig, traceStateRandomness bool) Config {
	cfg := DefaultConfig()
	cfg.CleanPercent, cfg.TraceStateRandomness = clean, traceStateRandomness
	if tools != nil {
		cfg.Tools = tools
	}
	return cfg
}

func TestDecide(t *testing.T) {
	cfg := DefaultConfig()
	cfg.KeepPercent = KeepPercentConfig{Storm: 100, ToolError: 50, Divergence: 0, SpanError: 25, Incomplete: 100}
	cfg.Tools = map[string]ToolConfig{"charge_card": {100}, "search": {0}, "email": {50}}
	policy, err := NewPolicy(cfg)
	require.NoError(t, err)
	const (
		high = 0xffffffffffffff // passes every threshold but never-sample
		mid  = 0x90000000000000 // passes 50% (th 8), not 25% (th c) nor 5%
		low  = 0x00000000000001 // passes 100% only
	)
	storm := Signals{true}
	toolError := Signals{false, true}
	divergence := Signals{false, false, true}
	spanAndTool := Signals{false, true, false, true}
	five := th(t, "f3333")
	tests := []struct {
		name string
		in   Input
		want Decision
	}{
		{"storm kept at 100%, no stamp", Input{TraceID: idWithRandomness(low), Signals: storm},
			Decision{Keep: true, Reason: ReasonStorm, Threshold: sampling.AlwaysSampleThreshold}},
		{"tool error at 50%, kept and stamped", Input{TraceID: idWithRandomness(mid), Signals: toolError},
			Decision{Keep: true, Reason: ReasonToolError, Threshold: th(t, "8"), Stamp: true}},
		{"tool error at 50%, dropped", Input{TraceID: idWithRandomness(low), Signals: toolError},
			Decision{Reason: ReasonToolError, Threshold: th(t, "8")}},
		{"divergence at 0% never kept", Input{TraceID: idWithRandomness(high), Signals: divergence},
			Decision{Reason: ReasonDivergence, Threshold: sampling.NeverSampleThreshold}},
		{"most generous signal decides", Input{TraceID: idWithRandomness(mid), Signals: spanAndTool},
			Decision{Keep: true, Reason: ReasonToolError, Threshold: th(t, "8"), Stamp: true}},
		{"clean at 5%, kept", Input{TraceID: idWithRandomness(high)},
			Decision{Keep: true, Reason: ReasonClean, Threshold: five, Stamp: true}},
		{"clean at 5%, dropped", Input{TraceID: idWithRandomness(mid)},
			Decision{Reason: ReasonClean, Threshold: five}},
		{"tool override raises", Input{TraceID: idWithRandomness(low), Tools: []string{"lookup", "charge_card"}},
			Decision{Keep: true, Reason: ReasonClean, Threshold: sampling.AlwaysSampleThreshold, Stamp: true}},
		{"tool override lowers", Input{TraceID: idWithRandomness(high), Tools: []string{"search"}},
			Decision{Reason: ReasonClean, Threshold: sampling.NeverSampleThreshold}},
		{"largest override wins", Input{TraceID: idWithRandomness(mid), Tools: []string{"search", "email"}},
			Decision{Keep: true, Reason: ReasonClean, Threshold: th(t, "8"), Stamp: true}},
		{"stricter incoming threshold is kept", Input{TraceID: idWithRandomness(high), TraceState: "ot=th:fff"},
			Decision{Keep: true, Reason: ReasonClean, Threshold: th(t, "fff"), Stamp: true}},
		{"looser incoming threshold is raised", Input{TraceID: idWithRandomness(high), TraceState: "ot=th:8"},
			Decision{Keep: true, Reason: ReasonClean, Threshold: five, Stamp: true}},
		{"inconsistent incoming threshold is ignored", Input{TraceID: idWithRandomness(mid), TraceState: "ot=th:fff"},
			Decision{Reason: ReasonClean, Threshold: five}},
		{"explicit rv replaces the trace id", Input{TraceID: idWithRandomness(low), TraceState: "ot=rv:ffffffffffffff"},
			Decision{Keep: true, Reason: ReasonClean, Threshold: five, Stamp: true}},
		{"storm at 100% ignores incoming", Input{TraceID: idWithRandomness(low), Signals: storm, TraceState: "ot=th:fff"},
			Decision{Keep: true, Reason: ReasonStorm, Threshold: sampling.AlwaysSampleThreshold}},
		{"unparsable tracestate: trace id decides", Input{TraceID: idWithRandomness(high), TraceState: "ot=th:zz,,=="},
			Decision{Keep: true, Reason: ReasonClean, Threshold: five, Stamp: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, policy.Decide(tt.in))
		})
	}
}

func TestPercentToThreshold(t *testing.T) {
	for _, tt := range []struct {
		pct  float64
		want string
	}{{100, "0"}, {50, "8"}, {25, "c"}, {5, "f3333"}, {1, "fd70a"}, {1e-30, "ffffffffffffff"}} {
		got, err := PercentToThreshold(tt.pct)
		require.NoError(t, err)
		assert.Equalf(t, tt.want, got.TValue(), "%v%%", tt.pct)
	}
	never, err := PercentToThreshold(0)
	require.NoError(t, err)
	assert.Equal(t, sampling.NeverSampleThreshold, never)
	for _, bad := range []float64{-1, 100.5} {
		_, err := PercentToThreshold(bad)
		assert.Error(t, err)
	}
	bad := DefaultConfig()
	bad.Tools = map[string]ToolConfig{"x": {101}}
	_, err = NewPolicy(bad)
	assert.ErrorContains(t, err, "tools.x.clean_percent")
}

func TestStamp(t *testing.T) {
	five := th(t, "f3333")
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"empty", "", "ot=th:f3333", false},
		{"other vendors kept", "vendor=a,ot=rv:abcdefabcdefab", "ot=rv:abcdefabcdefab;th:f3333,vendor=a", false},
		{"looser threshold raised", "ot=th:8", "ot=th:f3333", false},
		{"stricter threshold kept", "ot=th:fff", "ot=th:fff", false},
		{"unparsable left alone", "not a tracestate", "not a tracestate", true},
		// An ot value of 256 characters, the W3C limit: the threshold would push it past.
		{"no room for the threshold left alone", "ot=a:" + strings.Repeat("0", 251), "ot=a:" + strings.Repeat("0", 251), true},
		{"room for the threshold", "ot=a:" + strings.Repeat("0", 242), "ot=th:f3333;a:" + strings.Repeat("0", 242), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Stamp(tt.in, five)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantErr, err != nil)
		})
	}
}

// TestKeepsCleanMatchesDecide: KeepsClean is true exactly when Decide keeps the trace as
// clean for every set of tools, with and without overrides and incoming thresholds.
func TestKeepsCleanMatchesDecide(t *testing.T) {
	tools := [][]string{nil, {"a"}, {"b"}, {"a", "b"}, {"c"}}
	for _, r := range []Config{
		rates(5, nil, true),
		rates(0, nil, true),
		rates(100, nil, true),
		rates(5, map[string]ToolConfig{"a": {50}, "b": {1}}, true),
		rates(20, map[string]ToolConfig{"a": {0}}, true),
		rates(5, nil, false),
	} {
		p, err := NewPolicy(r)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(3, 4))
		for range 2000 {
			var id pcommon.TraceID
			for i := range id {
				id[i] = byte(rng.IntN(256))
			}
			ts := []string{"", "ot=th:8", "ot=th:fd", "ot=rv:00000000000000", "ot=rv:ffffffffffffff;th:0"}[rng.IntN(5)]
			want := true
			for _, ts2 := range tools {
				want = want && p.Decide(Input{TraceID: id, Tools: ts2, TraceState: ts}).Keep
			}
			assert.Equal(t, want, p.KeepsClean(id, ts), "rates %+v, trace %x, tracestate %q", r, id, ts)
		}
	}
}

// A client keeps its clean trace at any rate by writing rv at its maximum; a policy that
// ignores tracestate randomness samples it from its trace id, and the threshold it stamps
// is one the trace id passes, with the client's rv removed.
func TestIgnoringTraceStateRandomness(t *testing.T) {
	low := idWithRandomness(0x00000000000010)  // passes no 5% threshold
	high := idWithRandomness(0xffffffffffff00) // passes every threshold
	forced := "ot=rv:ffffffffffffff"
	honours, err := NewPolicy(rates(5, nil, true))
	require.NoError(t, err)
	ignores, err := NewPolicy(rates(5, nil, false))
	require.NoError(t, err)

	assert.True(t, honours.Decide(Input{TraceID: low, TraceState: forced}).Keep, "the sampling spec: rv is the randomness")
	assert.True(t, honours.KeepsClean(low, forced))
	assert.False(t, ignores.Decide(Input{TraceID: low, TraceState: forced}).Keep, "rv ignored: the trace id decides")
	assert.False(t, ignores.KeepsClean(low, forced))
	d := ignores.Decide(Input{TraceID: high, TraceState: forced})
	assert.True(t, d.Keep)
	// A threshold the trace id does not pass, sent with the rv that does, is a lie once rv
	// is ignored.
	assert.False(t, ignores.Decide(Input{TraceID: low, TraceState: "ot=rv:ffffffffffffff;th:fff"}).Keep)
	assert.True(t, ignores.Decide(Input{TraceID: low, Signals: Signals{true}, TraceState: forced}).Keep, "signals are kept as before")

	five := th(t, "f3333")
	for _, tt := range []struct{ in, honoured, ignored string }{
		{"", "ot=th:f3333", "ot=th:f3333"},
		{forced, "ot=rv:ffffffffffffff;th:f3333", "ot=th:f3333"},
		{"vendor=a,ot=rv:ffffffffffffff;th:fff", "vendor=a,ot=rv:ffffffffffffff;th:fff", "ot=th:fff,vendor=a"},
	} {
		got, err := honours.Stamp(tt.in, five)
		require.NoError(t, err)
		assert.Equal(t, tt.honoured, got, "honoured %q", tt.in)
		got, err = ignores.Stamp(tt.in, five)
		require.NoError(t, err)
		assert.Equal(t, tt.ignored, got, "ignored %q", tt.in)
	}
}
