package toolspan

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestClampTimestamp(t *testing.T) {
	for _, tt := range []struct {
		in      pcommon.Timestamp
		want    pcommon.Timestamp
		clamped bool
	}{
		{in: 0, want: 0},
		{in: 1_700_000_000_000_000_000, want: 1_700_000_000_000_000_000},
		{in: math.MaxInt64, want: math.MaxInt64},
		{in: math.MaxInt64 + 1, want: math.MaxInt64, clamped: true},
		{in: 1<<63 + 5, want: math.MaxInt64, clamped: true},
		{in: math.MaxUint64, want: math.MaxInt64, clamped: true},
	} {
		got, clamped := ClampTimestamp(tt.in)
		assert.Equal(t, tt.want, got, "%d", uint64(tt.in))
		assert.Equal(t, tt.clamped, clamped, "%d", uint64(tt.in))
	}
	assert.Equal(t, 2262, MaxTimestamp.AsTime().Year(), "the bound is a valid time.Time")
	assert.Equal(t, time.Unix(0, math.MaxInt64).UTC(), MaxTimestamp.AsTime().UTC())
}
