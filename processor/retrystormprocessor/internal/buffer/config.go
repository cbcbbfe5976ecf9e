package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"errors"
	"fmt"
	"time"
)

// Config sizes the store: how long traces are held, the memory they take and the
// decisions it remembers. Its keys sit at the root of the processor's configuration.
type Config struct {
	// DecisionWait is the longest a trace is held after its first span. Default 30s.
	DecisionWait time.Duration `mapstructure:"decision_wait"`
	// RootGrace is how long a trace is held after its root span arrived, when that comes
	// before DecisionWait; 0 decides as soon as the root arrives. Default 2s.
	RootGrace time.Duration `mapstructure:"root_grace"`
	// MaxBufferedBytes bounds the OTLP-encoded bytes held across all shards (split evenly
	// per shard); at least MinBufferedBytes (64 KiB). Default 268435456 (256 MiB).
	MaxBufferedBytes int64 `mapstructure:"max_buffered_bytes"`
	// MaxTraceBytes bounds the OTLP-encoded bytes one trace holds; past it the trace is
	// decided at once, provisionally for its rest. 0 = half a shard's share
	// (max_buffered_bytes / num_shards / 2); a larger value is capped at the share.
	// Default 0.
	MaxTraceBytes int64 `mapstructure:"max_trace_bytes"`
	// NumShards is the number of goroutines that own buffered traces; 0 = GOMAXPROCS.
	// Default 0.
	NumShards int `mapstructure:"num_shards"`
	// DecisionCache remembers decisions so late spans follow their trace.
	DecisionCache DecisionCacheConfig `mapstructure:"decision_cache"`
}

// DecisionCacheConfig sizes the memory of past decisions, split evenly over the shards.
type DecisionCacheConfig struct {
	// KeptTraces is how many kept trace ids are remembered (least recently used forgotten
	// first); 0 remembers none. Default 100000.
	KeptTraces int `mapstructure:"kept_traces"`
	// KeptBytes bounds the memory of the kept decisions: about 176 bytes each plus the
	// fingerprints of its trace's payload values that redaction remembers for its late
	// spans. Clean decisions are forgotten before signal ones; 0 remembers none. Default
	// 33554432 (32 MiB).
	KeptBytes int64 `mapstructure:"kept_bytes"`
	// DroppedTraces is how many dropped trace ids are remembered (oldest forgotten first),
	// as 64-bit fingerprints; 0 remembers none. Default 1000000.
	DroppedTraces int `mapstructure:"dropped_traces"`
}

// DefaultConfig returns the documented defaults (processor README, "Configuration").
func DefaultConfig() Config {
	return Config{
		DecisionWait:     30 * time.Second,
		RootGrace:        2 * time.Second,
		MaxBufferedBytes: 256 << 20,
		DecisionCache:    DecisionCacheConfig{KeptTraces: 100_000, KeptBytes: 32 << 20, DroppedTraces: 1_000_000},
	}
}

// MinBufferedBytes is the smallest max_buffered_bytes: what one shard needs to hold two
// average agent traces (about 29 kB of OTLP each) while they are assembled. Below it
// nearly every trace is decided as it arrives, on its first request: a value such as 1
// is a slip, not a setting.
const MinBufferedBytes = 64 << 10

// Upper bounds of the sizes that allocate at start or grow with traffic up to the size
// configured. Each is far above real use; they keep a slip of the keyboard (1e12) from
// passing validation and then killing the collector at start. The memory each implies was
// measured on amd64 (Go 1.25 maps: an index entry costs more right after its map grew).
const (
	// MaxNumShards: each shard holds about 30–70 kB (analyzer, key table, queues, cache
	// index) plus its goroutine, and takes about 50 µs to start.
	MaxNumShards = 1024
	// MaxKeptTraces: an LRU entry of a kept trace id and its decision, about 152 bytes,
	// allocated as decisions are kept.
	MaxKeptTraces = 10_000_000
	// MaxKeptBytes: the kept decisions' memory, allocated as decisions are kept; resident
	// memory is up to twice the live heap (GOGC=100).
	MaxKeptBytes = 16 << 30
	// MaxDroppedTraces: 8 bytes of fingerprint ring allocated at start plus the index,
	// 30–48 bytes an entry once full.
	MaxDroppedTraces = 50_000_000
)

// ValidateAt checks the keys, which sit at the root of the processor's configuration
// (parent ""), naming each in full. It is not Validate: confmap would call that too, and
// put the path before errors that name it.
func (c *Config) ValidateAt(parent string) error {
	key := func(name string) string {
		if parent == "" {
			return name
		}
		return parent + "." + name
	}
	dc := c.DecisionCache
	errs := []error{
		atMost(key("num_shards"), c.NumShards, MaxNumShards, "about 70 MB"),
		atMost(key("decision_cache.kept_traces"), dc.KeptTraces, MaxKeptTraces, "about 1.5 GB"),
		atMost(key("decision_cache.kept_bytes"), dc.KeptBytes, MaxKeptBytes, "16 GiB, up to 32 GiB resident"),
		atMost(key("decision_cache.dropped_traces"), dc.DroppedTraces, MaxDroppedTraces, "about 2.4 GB"),
	}
	if c.DecisionWait <= 0 {
		errs = append(errs, fmt.Errorf("%s must be greater than 0", key("decision_wait")))
	}
	if c.RootGrace < 0 {
		errs = append(errs, fmt.Errorf("%s must not be negative", key("root_grace")))
	}
	if c.MaxBufferedBytes < MinBufferedBytes {
		errs = append(errs, fmt.Errorf("%s must be at least %d (64 KiB)", key("max_buffered_bytes"), MinBufferedBytes))
	}
	switch {
	case c.MaxTraceBytes < 0:
		errs = append(errs, fmt.Errorf("%s must not be negative (0 = half a shard's share of %s)", key("max_trace_bytes"), key("max_buffered_bytes")))
	case c.MaxBufferedBytes > 0 && c.MaxTraceBytes > c.MaxBufferedBytes:
		errs = append(errs, fmt.Errorf("%s must be at most %s", key("max_trace_bytes"), key("max_buffered_bytes")))
	}
	if c.NumShards < 0 {
		errs = append(errs, fmt.Errorf("%s must not be negative (0 = GOMAXPROCS)", key("num_shards")))
	}
	for _, size := range []struct {
		name string
		n    int64
	}{{"kept_traces", int64(dc.KeptTraces)}, {"kept_bytes", dc.KeptBytes}, {"dropped_traces", int64(dc.DroppedTraces)}} {
		if size.n < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", key("decision_cache."+size.name)))
		}
	}
	return errors.Join(errs...)
}

func atMost[N int | int64](key string, value, bound N, memory string) error {
	if value > bound {
		return fmt.Errorf("%s must be at most %d (%s)", key, bound, memory)
	}
	return nil
}
