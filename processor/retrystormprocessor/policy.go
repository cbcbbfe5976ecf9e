package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
	"go.opentelemetry.io/collector/component"
)

// PolicyConfig is the retry_storm analysis as a policy of another sampler (the
// retry_storm tail_sampling policy extension): the processor's analysis settings under the
// processor's keys and types, so that one block can be copied between the two, and the
// keep rate of each signal. The policy never buffers, annotates, redacts nor keeps clean
// traces: those settings of the processor have no key here.
type PolicyConfig struct {
	// AnalysisConfig: storm_threshold, attributes, recognition, status, divergence and
	// completeness, as the processor reads them. Of divergence.stale_cache, recheck_window
	// and held_suspects are accepted and have no effect here: a sampler's decision is
	// final, so no suspect is held for a later recheck (the processor after it holds them).
	AnalysisConfig `mapstructure:",squash"`
	// KeepPercent is the share of traces sampled for each signal (sampling.keep_percent of
	// the processor). Default 100 each. A clean trace is never sampled by the policy: it is
	// left to the sampler's other policies.
	KeepPercent KeepPercentConfig `mapstructure:"keep_percent"`
	// Hashing names the HMAC key of the payload hashes (key_file or key_env). Default no
	// key: plain SHA-256. redact_payloads is accepted and has no effect: the policy
	// forwards nothing itself.
	Hashing HashingConfig `mapstructure:"hashing"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*PolicyConfig)(nil)

// NewDefaultPolicyConfig returns the policy's defaults: the processor's.
func NewDefaultPolicyConfig() *PolicyConfig {
	s := verdict.DefaultStages()
	return &PolicyConfig{AnalysisConfig: s.AnalysisConfig, KeepPercent: s.Sampling.KeepPercent, Hashing: s.Hashing}
}

// Validate checks the configuration without touching the file system or the environment,
// with the processor's error texts for the processor's keys.
func (cfg *PolicyConfig) Validate() error {
	return errors.Join(cfg.AnalysisConfig.ValidateAt(""), cfg.KeepPercent.ValidateAt("keep_percent"), cfg.Hashing.ValidateAt("hashing"))
}

// stages are the verdict's stages the policy runs: the processor's defaults with the
// policy's analysis settings and keep rates; clean traces are left to the other policies.
func (cfg *PolicyConfig) stages(kp KeepPercentConfig) verdict.Stages {
	s := verdict.DefaultStages()
	s.AnalysisConfig, s.Hashing = cfg.AnalysisConfig, cfg.Hashing
	s.Sampling.CleanPercent, s.Sampling.KeepPercent, s.Sampling.Tools = 0, kp, nil
	return s
}

// ReadKey reads the HMAC key named by hashing.key_file or hashing.key_env, as the
// processor does at start; nil means plain SHA-256. Errors name the file or the variable,
// never the key.
func (cfg *PolicyConfig) ReadKey() ([]byte, error) {
	return cfg.Hashing.ReadKey()
}
