package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"
	"fmt"
)

// Upper bounds of the sizes that allocate at start or grow with traffic up to the size
// configured. Each is far above real use; they keep a slip of the keyboard (1e12) from
// passing validate and then killing the collector at start. The memory each implies was
// measured on amd64 (Go 1.25 maps: an index entry costs more right after its map grew).
const (
	// maxNumShards: each shard holds about 30–70 kB (analyzer, key table, queues, cache
	// index) plus its goroutine, and takes about 50 µs to start.
	maxNumShards = 1024
	// maxKeptTraces: an LRU entry of a kept trace id and its decision, about 152 bytes,
	// allocated as decisions are kept.
	maxKeptTraces = 10_000_000
	// maxKeptBytes: the kept decisions' memory, allocated as decisions are kept; resident
	// memory is up to twice the live heap (GOGC=100).
	maxKeptBytes = 16 << 30
	// maxDroppedTraces: 8 bytes of fingerprint ring allocated at start plus the index,
	// 30–48 bytes an entry once full.
	maxDroppedTraces = 50_000_000
)

// minBufferedBytes is the smallest max_buffered_bytes: what one shard needs to hold two
// average agent traces (about 29 kB of OTLP each) while they are assembled. Below it
// nearly every trace is decided as it arrives, on its first request: a value such as 1
// is a slip, not a setting.
const minBufferedBytes = 64 << 10

// validateBounds checks the sizes against their upper bounds, naming each key, its bound
// and the memory the bound implies.
func (cfg *Config) validateBounds() error {
	errs := errors.Join(
		atMost("num_shards", cfg.NumShards, maxNumShards, "about 70 MB"),
		atMost("decision_cache.kept_traces", cfg.DecisionCache.KeptTraces, maxKeptTraces, "about 1.5 GB"),
		atMost("decision_cache.kept_bytes", cfg.DecisionCache.KeptBytes, maxKeptBytes, "16 GiB, up to 32 GiB resident"),
		atMost("decision_cache.dropped_traces", cfg.DecisionCache.DroppedTraces, maxDroppedTraces, "about 2.4 GB"),
	)
	return errs
}

func atMost[N int | int64](key string, value, bound N, memory string) error {
	if value > bound {
		return fmt.Errorf("%s must be at most %d (%s)", key, bound, memory)
	}
	return nil
}
