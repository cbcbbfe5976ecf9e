package zerostart

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSeries(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	type export struct {
		series string
		at     time.Duration // after t0
		zero   bool
	}
	for _, tc := range []struct {
		name    string
		hold    time.Duration
		exports []export
	}{
		{"hold 0: the first export only", 0, []export{
			{"a", 0, true}, {"a", 0, false}, {"a", time.Second, false},
		}},
		{"held until hold has passed since the first export", 15 * time.Second, []export{
			{"a", 0, true}, {"a", 5 * time.Second, true}, {"a", 14999 * time.Millisecond, true},
			{"a", 15 * time.Second, false}, {"a", time.Hour, false},
		}},
		{"each series from its own first export", 10 * time.Second, []export{
			{"a", 0, true}, {"b", 8 * time.Second, true}, {"a", 10 * time.Second, false},
			{"b", 10 * time.Second, true}, {"b", 18 * time.Second, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New[string](tc.hold)
			for i, e := range tc.exports {
				assert.Equal(t, e.zero, s.Zero(e.series, t0.Add(e.at)), "export %d: series %s at +%s", i, e.series, e.at)
			}
		})
	}
}
