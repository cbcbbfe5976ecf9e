package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"time"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// Config is what the buffer is built from: the processor's configuration, validated, in the
// terms of the packages that use it. The processor's README documents each key.
type Config struct {
	// DecisionWait is the longest a trace is held after its first span (decision_wait).
	DecisionWait time.Duration
	// RootGrace is how long a trace is held after its root arrived (root_grace).
	RootGrace time.Duration
	// MaxBufferedBytes bounds the OTLP-encoded bytes held, split evenly over the shards
	// (max_buffered_bytes).
	MaxBufferedBytes int64
	// MaxTraceBytes bounds one trace; 0 is half a shard's share, and a shard's share caps
	// it (max_trace_bytes).
	MaxTraceBytes int64
	// NumShards is the number of shards; 0 is GOMAXPROCS (num_shards).
	NumShards int
	// KeptTraces and DroppedTraces size the decision cache, split evenly over the shards
	// (decision_cache).
	KeptTraces, DroppedTraces int
	// KeptBytes bounds the memory of the kept decisions, split evenly over the shards
	// (decision_cache.kept_bytes).
	KeptBytes int64
	// Sampling are the keep rates (sampling).
	Sampling sample.Config
	// RedactPayloads redacts the tool payloads of kept traces (hashing.redact_payloads).
	RedactPayloads bool
	// Analysis configures each shard's analyzer; the attributes it reads from clients
	// under retry_storm's namespace stay on arriving spans, every other attribute under it
	// is removed (package inbound).
	Analysis analysis.Config
	// Redaction configures each shard's redactor (redaction).
	Redaction redact.Config
	// StaleCache sizes the memory behind the stale-cache check (divergence.stale_cache).
	StaleCache stalecache.Config
}
