package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Config is the configuration of the retry_storm processor.
type Config struct {
	// DecisionWait is the longest a trace is held after its first span. Default 30s.
	DecisionWait time.Duration `mapstructure:"decision_wait"`
	// RootGrace is how long a trace is held after its root span arrived, when that comes
	// before DecisionWait; 0 decides as soon as the root arrives. Default 2s.
	RootGrace time.Duration `mapstructure:"root_grace"`
	// MaxBufferedBytes bounds the OTLP-encoded bytes held across all shards (split evenly
	// per shard); at least minBufferedBytes (64 KiB). Default 268435456 (256 MiB).
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
	// Sampling sets the keep rates.
	Sampling SamplingConfig `mapstructure:"sampling"`
	// Hashing configures payload hashing and redaction.
	Hashing HashingConfig `mapstructure:"hashing"`
	// Redaction says where else in a kept trace tool payloads are removed.
	Redaction RedactionConfig `mapstructure:"redaction"`
	// AnalysisConfig holds the keys the analysis reads, at the root: storm_threshold,
	// attributes, recognition, status, divergence and completeness.
	AnalysisConfig `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// DecisionCacheConfig sizes the memory of past decisions.
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

// SamplingConfig sets the share of traces kept; its keys and defaults are sample.Config's.
type SamplingConfig = sample.Config

// KeepPercentConfig is the keep rate of each signal.
type KeepPercentConfig = sample.KeepPercentConfig

// ToolSamplingConfig is the clean rate of traces touching one tool.
type ToolSamplingConfig = sample.ToolConfig

// AnalysisConfig is the keys the analysis reads; they and their defaults are
// analysis.Config's.
type AnalysisConfig = analysis.Config

// StatusConfig configures the isError status remap; its keys and defaults are
// toolspan.StatusConfig's.
type StatusConfig = toolspan.StatusConfig

// HashingConfig configures payload hashing. The HMAC key never sits in the YAML: it is read
// at start from KeyFile or KeyEnv and never logged.
type HashingConfig struct {
	// KeyFile is a file holding the HMAC-SHA256 key (a trailing newline is ignored).
	// Default "" (no key file).
	KeyFile string `mapstructure:"key_file"`
	// KeyEnv is the name of an environment variable holding the HMAC-SHA256 key. Default ""
	// (no variable). With neither KeyFile nor KeyEnv, hashes are plain SHA-256.
	KeyEnv string `mapstructure:"key_env"`
	// RedactPayloads deletes raw arguments, results and idempotency keys from kept spans
	// after hashing. Default true.
	RedactPayloads bool `mapstructure:"redact_payloads"`
}

// errInlineKey is returned for `hashing: {key: …}`; the value is never echoed.
var errInlineKey = errors.New("hashing.key is not allowed: put the key in key_file or key_env")

// Unmarshal refuses an inline key before it is decoded anywhere.
func (h *HashingConfig) Unmarshal(conf *confmap.Conf) error {
	if conf.IsSet("key") {
		return errInlineKey
	}
	return conf.Unmarshal(h)
}

// DivergenceConfig configures the divergence findings; its keys and defaults are
// findings.DivergenceConfig's.
type DivergenceConfig = findings.DivergenceConfig

// StaleCacheConfig bounds the stale_cache_suspect check; its keys and defaults are
// stalecache.Config's.
type StaleCacheConfig = stalecache.Config

// CompletenessConfig configures the incomplete_record finding; its keys and defaults are
// findings.CompletenessConfig's.
type CompletenessConfig = findings.CompletenessConfig

var _ component.Config = (*Config)(nil)

// Validate checks the configuration without touching the file system or the environment.
func (cfg *Config) Validate() error {
	errs := cfg.validateBounds()
	if cfg.DecisionWait <= 0 {
		errs = errors.Join(errs, errors.New("decision_wait must be greater than 0"))
	}
	if cfg.RootGrace < 0 {
		errs = errors.Join(errs, errors.New("root_grace must not be negative"))
	}
	if cfg.MaxBufferedBytes < minBufferedBytes {
		errs = errors.Join(errs, fmt.Errorf("max_buffered_bytes must be at least %d (64 KiB)", minBufferedBytes))
	}
	errs = errors.Join(errs, cfg.validateTraceBytes())
	if cfg.NumShards < 0 {
		errs = errors.Join(errs, errors.New("num_shards must not be negative (0 = GOMAXPROCS)"))
	}
	if cfg.DecisionCache.KeptTraces < 0 {
		errs = errors.Join(errs, errors.New("decision_cache.kept_traces must not be negative"))
	}
	if cfg.DecisionCache.KeptBytes < 0 {
		errs = errors.Join(errs, errors.New("decision_cache.kept_bytes must not be negative"))
	}
	if cfg.DecisionCache.DroppedTraces < 0 {
		errs = errors.Join(errs, errors.New("decision_cache.dropped_traces must not be negative"))
	}
	return errors.Join(errs, cfg.Sampling.ValidateAt("sampling"), cfg.AnalysisConfig.ValidateAt(""), cfg.Hashing.validate(),
		cfg.Redaction.ValidateAt("redaction"))
}

func (cfg *Config) validateTraceBytes() error {
	switch {
	case cfg.MaxTraceBytes < 0:
		return errors.New("max_trace_bytes must not be negative (0 = half a shard's share of max_buffered_bytes)")
	case cfg.MaxBufferedBytes > 0 && cfg.MaxTraceBytes > cfg.MaxBufferedBytes:
		return errors.New("max_trace_bytes must be at most max_buffered_bytes")
	}
	return nil
}

func (h *HashingConfig) validate() error {
	if h.KeyFile != "" && h.KeyEnv != "" {
		return errors.New("hashing.key_file and hashing.key_env are mutually exclusive: set one")
	}
	return nil
}
