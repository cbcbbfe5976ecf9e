package stalecache // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Config is the stale_cache_suspect check, the processor's divergence.stale_cache block:
// what counts as a stale read (package findings applies it) and the memory behind it.
type Config struct {
	// MaxDurationRatio: an attempt counts as far faster when its duration is at most this
	// share of its siblings' mean. Default 0.1.
	MaxDurationRatio float64 `mapstructure:"max_duration_ratio"`
	// MaxDuration: and at most this long. Default 50ms.
	MaxDuration time.Duration `mapstructure:"max_duration"`
	// RememberedResults is how many result hashes the collector remembers across traces;
	// 0 disables the check. Default 100000.
	RememberedResults int `mapstructure:"remembered_results"`
	// MinAge: a result counts as cached when first seen at least this long before. Default 1m.
	MinAge time.Duration `mapstructure:"min_age"`
	// RecheckWindow is how long a suspect whose result no earlier trace has shown yet is
	// held, so that the trace it copied, decided later, still makes it a finding; 0 holds
	// none (the check then sees only traces decided before). Default 2m.
	RecheckWindow time.Duration `mapstructure:"recheck_window"`
	// HeldSuspects bounds the suspects held at once (the oldest is forgotten first); 0
	// holds none. Default 10000.
	HeldSuspects int `mapstructure:"held_suspects"`
}

// DefaultConfig returns the documented defaults (processor README, "Divergence and
// completeness").
func DefaultConfig() Config {
	return Config{
		MaxDurationRatio:  0.1,
		MaxDuration:       50 * time.Millisecond,
		RememberedResults: 100_000,
		MinAge:            time.Minute,
		// Covers a trace decided a whole decision_wait (30s) after the stale read that
		// copied it, with room for a retried export.
		RecheckWindow: 2 * time.Minute,
		HeldSuspects:  10_000,
	}
}

// SeenEarlier reports that a result first seen at first counts as cached for an attempt
// that started at start: it was seen at least MinAge earlier.
func (c *Config) SeenEarlier(first, start pcommon.Timestamp) bool {
	return int64(start)-int64(first) >= c.MinAge.Nanoseconds()
}

// Upper bounds of the sizes allocated at start: far above real use, they keep a slip of
// the keyboard (1e12) from passing validation and then killing the collector at start.
// The memory each implies was measured on amd64.
const (
	// MaxRememberedResults: 32 bytes a fingerprint, the whole table allocated at start.
	MaxRememberedResults = 10_000_000
	// MaxHeldSuspects: 64 bytes a slot allocated at start, and while held each suspect
	// keeps its call's record (1–2 kB).
	MaxHeldSuspects = 1_000_000
)

// ValidateAt checks the block found at key (divergence.stale_cache), naming each key in
// full. It is not Validate: confmap would call that too, and put the path before errors
// that name it.
func (c *Config) ValidateAt(key string) error {
	var errs []error
	if c.MaxDurationRatio < 0 || c.MaxDurationRatio > 1 || c.MaxDurationRatio != c.MaxDurationRatio {
		errs = append(errs, fmt.Errorf("%s.max_duration_ratio must be between 0 and 1", key))
	}
	if c.MaxDuration < 0 {
		errs = append(errs, fmt.Errorf("%s.max_duration must not be negative", key))
	}
	switch {
	case c.RememberedResults < 0:
		errs = append(errs, fmt.Errorf("%s.remembered_results must not be negative (0 disables the check)", key))
	case c.RememberedResults > MaxRememberedResults:
		errs = append(errs, fmt.Errorf("%s.remembered_results must be at most %d (about 320 MB, allocated at start)", key, MaxRememberedResults))
	}
	if c.MinAge < 0 {
		errs = append(errs, fmt.Errorf("%s.min_age must not be negative", key))
	}
	if c.RecheckWindow < 0 {
		errs = append(errs, fmt.Errorf("%s.recheck_window must not be negative (0 holds no suspect)", key))
	}
	switch {
	case c.HeldSuspects < 0:
		errs = append(errs, fmt.Errorf("%s.held_suspects must not be negative (0 holds no suspect)", key))
	case c.HeldSuspects > MaxHeldSuspects:
		errs = append(errs, fmt.Errorf("%s.held_suspects must be at most %d (64 MB allocated at start, up to about 2 GB of records while full)",
			key, MaxHeldSuspects))
	}
	return errors.Join(errs...)
}

// NewMemory returns the memory cfg describes, holding suspects on the clock now; nil when
// cfg turns the check off (remembered_results 0).
func NewMemory(cfg Config, now func() time.Time) *Memory {
	if cfg.RememberedResults <= 0 {
		return nil
	}
	m := New(cfg.RememberedResults)
	m.HoldSuspects(cfg, now)
	return m
}
