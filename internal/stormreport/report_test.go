package stormreport

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func TestBuildTotals(t *testing.T) {
	failure := storm("f", "lookup", "", "error")
	failure.Storm, failure.IncompleteAttempts = false, 1
	failure.Findings = []stormrecord.Finding{{Kind: "unrecovered_failure"}, {Kind: "incomplete_record"}}
	drift := storm("d", "search", "changed_arguments", "error", "ok", "ok")
	drift.Findings = []stormrecord.Finding{{Kind: "result_drift"}, {Kind: "result_drift"}}
	drift.StatusFlip = true
	records := []stormrecord.Record{
		withFailedTokens(storm("a", "charge_card", "exhausted", "error", "timeout", "error"), ptr(int64(100)), ptr(int64(10))),
		withFailedTokens(storm("b", "charge_card", "exhausted", "error", "error"), ptr(int64(50)), nil),
		drift,
		storm("u", "search", "", "error", "ok"),
		failure,
	}

	r := Build(records, 20)
	assert.Equal(t, 5, r.Spans)
	assert.Equal(t, 4, r.StormSpans)
	assert.Equal(t, 1, r.StatusFlipSpans)
	assert.Equal(t, 11, r.ToolEvents)
	assert.Equal(t, 1, r.IncompleteEvents)
	assert.Equal(t, 8, r.FailedAttempts)
	assert.Equal(t, ptr(int64(160)), r.FailedTokens)
	assert.Equal(t, []ClassTotal{
		{Class: "exhausted", Storms: 2, Attempts: 5, FailedTokens: ptr(int64(160))},
		{Class: "changed_arguments", Storms: 1, Attempts: 3},
		{Class: "unclassified", Storms: 1, Attempts: 2},
	}, r.ByClass)
	assert.Equal(t, []FindingTotal{
		{Kind: "result_drift", Findings: 2, Calls: 1},
		{Kind: "incomplete_record", Findings: 1, Calls: 1},
		{Kind: "unrecovered_failure", Findings: 1, Calls: 1},
	}, r.ByFinding)
	assert.Equal(t, []ToolTotal{
		{Tool: "charge_card", Calls: 2, Storms: 2, Attempts: 5, FailedAttempts: 5, FailedTokens: ptr(int64(160))},
		{Tool: "search", Calls: 2, Storms: 2, Attempts: 5, FailedAttempts: 2},
		{Tool: "lookup", Calls: 1, Storms: 0, Attempts: 1, FailedAttempts: 1},
	}, r.ByTool)
}

func TestRankings(t *testing.T) {
	long := storm("long", "t", "exhausted", "error", "error", "error")
	long.MS = 9000
	zero := withFailedTokens(storm("zero", "t", "exhausted", "ok", "ok"), ptr(int64(0)), ptr(int64(0)))
	zero.MS = 1500 // same attempts as "two", shorter
	records := []stormrecord.Record{
		withFailedTokens(storm("two", "t", "exhausted", "error", "error"), ptr(int64(900)), ptr(int64(0))),
		withFailedTokens(storm("three", "t", "exhausted", "error", "error", "error"), ptr(int64(10)), nil),
		long,
		zero,
	}
	tests := []struct {
		name       string
		top        int
		byAttempts []string
		byTokens   []string
	}{
		{name: "all", top: 0, byAttempts: []string{"long", "three", "two", "zero"}, byTokens: []string{"two", "three"}},
		{name: "top 2", top: 2, byAttempts: []string{"long", "three"}, byTokens: []string{"two", "three"}},
		{name: "top 1", top: 1, byAttempts: []string{"long"}, byTokens: []string{"two"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Build(records, tt.top)
			assert.Equal(t, tt.byAttempts, spanIDs(r.TopStorms))
			assert.Equal(t, tt.byTokens, spanIDs(r.TopFailedTokenStorms), "unknown and zero failed tokens are not ranked")
		})
	}
}

func spanIDs(rows []StormRow) []string {
	out := []string{}
	for _, row := range rows {
		out = append(out, row.SpanID)
	}
	return out
}

func TestFailedTokensNeverFabricatesAZero(t *testing.T) {
	tests := []struct {
		name    string
		in, out *int64
		want    *int64
	}{
		{name: "both unknown", want: nil},
		{name: "both known", in: ptr(int64(5)), out: ptr(int64(7)), want: ptr(int64(12))},
		{name: "only in", in: ptr(int64(5)), want: ptr(int64(5))},
		{name: "only out", out: ptr(int64(7)), want: ptr(int64(7))},
		{name: "known zero", in: ptr(int64(0)), out: ptr(int64(0)), want: ptr(int64(0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := stormrecord.Record{FailedTokensIn: tt.in, FailedTokensOut: tt.out}
			assert.Equal(t, tt.want, FailedTokens(&r))
		})
	}
}

func TestBuildEmpty(t *testing.T) {
	r := Build(nil, 20)
	assert.NotNil(t, r.TopStorms, "an empty ranking is [] in JSON, not null")
	assert.NotNil(t, r.TopFailedTokenStorms)
	assert.Nil(t, r.FailedTokens)
	assert.Zero(t, r.Spans)
}
