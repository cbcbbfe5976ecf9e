package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"time"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
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
	// Analysis configures each shard's analyzer; its Key is set at Start.
	Analysis analysis.Config
	// Redaction configures each shard's redactor (redaction, attributes).
	Redaction redact.Config
	// StaleCache sizes the memory behind the stale-cache check (divergence.stale_cache).
	StaleCache StaleCacheConfig
	// ClientInputs are the attributes the configuration reads from clients; those under
	// retry_storm's namespace stay on arriving spans, every other attribute under it is
	// removed (package inbound).
	ClientInputs []string
}

// StaleCacheConfig sizes the result memory shared by the shards and the suspects it holds.
type StaleCacheConfig struct {
	// RememberedResults is how many result fingerprints are remembered; 0 turns the
	// stale-cache check off.
	RememberedResults int
	// MinAge is how much earlier a result must have been seen to count as cached.
	MinAge time.Duration
	// RecheckWindow is how long a suspect is held for the trace it copied.
	RecheckWindow time.Duration
	// HeldSuspects bounds the suspects held at once.
	HeldSuspects int
}
