package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"

	"go.opentelemetry.io/collector/component"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// Config is the configuration of the retry_storm processor: the engine's own, each block
// owned, defaulted and checked by the package that uses it (README, "Configuration").
type Config struct {
	// Buffering holds each trace until it can be decided and samples it (standalone mode).
	// false takes every trace as released whole by a sampler before the processor (the
	// tail_sampling processor with the retry_storm policy): each is kept and given the
	// verdict as it arrives, and later spans of it take the late path; decision_wait,
	// root_grace, max_trace_bytes and sampling are then not used. Default true.
	Buffering bool `mapstructure:"buffering"`
	// BufferConfig sizes the store: decision_wait, root_grace, max_buffered_bytes,
	// max_trace_bytes, num_shards and decision_cache, at the root.
	BufferConfig `mapstructure:",squash"`
	// StagesConfig configures the verdict on each trace: storm_threshold, attributes,
	// recognition, status, divergence and completeness at the root, and the sampling,
	// hashing and redaction blocks.
	StagesConfig `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// BufferConfig is the store's keys, at the root; they and their defaults are
// buffer.Config's.
type BufferConfig = buffer.Config

// DecisionCacheConfig sizes the memory of past decisions.
type DecisionCacheConfig = buffer.DecisionCacheConfig

// StagesConfig is the keys of the verdict's steps; they and their defaults are
// verdict.Stages's.
type StagesConfig = verdict.Stages

// AnalysisConfig is the keys the analysis reads, at the root; they and their defaults are
// analysis.Config's.
type AnalysisConfig = analysis.Config

// SamplingConfig sets the share of traces kept; its keys and defaults are sample.Config's.
type SamplingConfig = sample.Config

// KeepPercentConfig is the keep rate of each signal.
type KeepPercentConfig = sample.KeepPercentConfig

// ToolSamplingConfig is the clean rate of traces touching one tool.
type ToolSamplingConfig = sample.ToolConfig

// AttributesConfig lists, for each attempt field, the span attributes it is read from, in
// order: the first present wins. An entry `key#a.b` reads the element a.b inside the
// attribute (a map or a JSON string). Setting a key replaces its whole default list. Its
// keys and defaults are attrsource.Lists's.
type AttributesConfig = attrsource.Lists

// RecognitionConfig says which spans are tool-call attempts; its keys and defaults are
// toolspan.Recognition's. Setting a key replaces its whole default list.
type RecognitionConfig = toolspan.Recognition

// ToolSpanRuleConfig is one recognition rule: exactly one of attribute, span_name and
// span_name_prefix.
type ToolSpanRuleConfig = toolspan.Rule

// StatusConfig configures the isError status remap; its keys and defaults are
// toolspan.StatusConfig's.
type StatusConfig = toolspan.StatusConfig

// HashingConfig configures payload hashing; its keys and defaults are
// payload.HashingConfig's. The HMAC key never sits in the YAML.
type HashingConfig = payload.HashingConfig

// RedactionConfig says where, beyond the tool spans, a kept trace's tool payloads are
// removed when hashing.redact_payloads is on; its keys and defaults are redact.Config's.
type RedactionConfig = redact.Config

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
	return errors.Join(cfg.BufferConfig.ValidateAt(""), cfg.StagesConfig.ValidateAt(""))
}
