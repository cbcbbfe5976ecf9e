package stalecache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSeenEarlier: the one min_age rule, which both the check at analysis and the held
// suspects apply.
func TestSeenEarlier(t *testing.T) {
	cfg := DefaultConfig()
	for _, tt := range []struct {
		first, start int
		want         bool
	}{
		{first: 0, start: 1, want: true},  // exactly min_age earlier
		{first: 0, start: 5, want: true},  // longer
		{first: 1, start: 1, want: false}, // at once
		{first: 2, start: 1, want: false}, // after the attempt started
	} {
		assert.Equal(t, tt.want, cfg.SeenEarlier(minutes(tt.first), minutes(tt.start)), "first %dm, start %dm", tt.first, tt.start)
	}
	assert.True(t, (&Config{}).SeenEarlier(minutes(1), minutes(1)), "min_age 0: any earlier or equal sighting")
}

func TestNewMemoryOffAtZero(t *testing.T) {
	cfg := DefaultConfig()
	assert.NotNil(t, NewMemory(cfg, time.Now))
	cfg.RememberedResults = 0
	assert.Nil(t, NewMemory(cfg, time.Now), "remembered_results 0 turns the check off")
}
