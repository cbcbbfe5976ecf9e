package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
)

// PolicyConfig is the retry_storm analysis as a policy of another sampler (the
// retry_storm tail_sampling policy extension): the processor's analysis settings under the
// processor's keys and types, so that one block can be copied between the two, and the
// keep rate of each signal. The policy never buffers, annotates, redacts nor keeps clean
// traces: those settings of the processor have no key here.
type PolicyConfig struct {
	// StormThreshold is the number of attempts by one layer that makes a storm. Default 2.
	StormThreshold int `mapstructure:"storm_threshold"`
	// KeepPercent is the share of traces sampled for each signal (sampling.keep_percent of
	// the processor). Default 100 each. A clean trace is never sampled by the policy: it is
	// left to the sampler's other policies.
	KeepPercent KeepPercentConfig `mapstructure:"keep_percent"`
	// Attributes are the ordered attribute sources of each attempt field. Default: the
	// processor's.
	Attributes AttributesConfig `mapstructure:"attributes"`
	// Recognition says which spans are tool-call attempts. Default: the processor's.
	Recognition RecognitionConfig `mapstructure:"recognition"`
	// Status configures the isError status remap as the analysis reads it (the policy
	// rewrites no span). Default override_ok true, tool_error_values [error].
	Status StatusConfig `mapstructure:"status"`
	// Hashing names the HMAC key of the payload hashes (key_file or key_env). Default no
	// key: plain SHA-256. redact_payloads is accepted and has no effect: the policy
	// forwards nothing itself.
	Hashing HashingConfig `mapstructure:"hashing"`
	// Divergence configures the divergence findings. Default: the processor's. Of
	// stale_cache, recheck_window and held_suspects are accepted and have no effect: a
	// sampler's decision is final, so no suspect is held for a later recheck.
	Divergence DivergenceConfig `mapstructure:"divergence"`
	// Completeness configures the incomplete_record finding. Default [tool_name].
	Completeness CompletenessConfig `mapstructure:"completeness"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*PolicyConfig)(nil)

// NewDefaultPolicyConfig returns the policy's defaults: the processor's, taken from its
// default configuration.
func NewDefaultPolicyConfig() *PolicyConfig {
	cfg := createDefaultConfig().(*Config)
	return &PolicyConfig{
		StormThreshold: cfg.StormThreshold,
		KeepPercent:    cfg.Sampling.KeepPercent,
		Attributes:     cfg.Attributes,
		Recognition:    cfg.Recognition,
		Status:         cfg.Status,
		Hashing:        cfg.Hashing,
		Divergence:     cfg.Divergence,
		Completeness:   cfg.Completeness,
	}
}

// Validate checks the configuration without touching the file system or the environment,
// with the processor's error texts for the processor's keys.
func (cfg *PolicyConfig) Validate() error {
	var errs error
	if cfg.StormThreshold < 2 {
		errs = errors.New("storm_threshold must be at least 2")
	}
	sc := cfg.Divergence.StaleCache
	return errors.Join(errs,
		cfg.KeepPercent.validate("keep_percent"),
		cfg.Attributes.ValidateKeys("attributes"),
		cfg.Recognition.ValidateRules("recognition"),
		cfg.Status.validate(),
		cfg.Hashing.validate(),
		cfg.Divergence.validate(),
		atMost("divergence.stale_cache.remembered_results", sc.RememberedResults,
			maxRememberedResults, "about 320 MB, allocated at start"),
		atMost("divergence.stale_cache.held_suspects", sc.HeldSuspects,
			maxHeldSuspects, "64 MB allocated at start, up to about 2 GB of records while full"),
		cfg.Completeness.validate(),
	)
}

// validate checks every rate, naming it under parent.
func (k *KeepPercentConfig) validate(parent string) error {
	return errors.Join(
		validPercent(parent+".storm", k.Storm),
		validPercent(parent+".tool_error", k.ToolError),
		validPercent(parent+".divergence", k.Divergence),
		validPercent(parent+".span_error", k.SpanError),
		validPercent(parent+".incomplete", k.Incomplete),
	)
}

// processorConfig is the processor configuration whose analysis the policy runs: the
// processor's defaults with the policy's analysis settings.
func (cfg *PolicyConfig) processorConfig() *Config {
	pc := createDefaultConfig().(*Config)
	pc.StormThreshold = cfg.StormThreshold
	pc.Sampling.KeepPercent = cfg.KeepPercent
	pc.Attributes = cfg.Attributes
	pc.Recognition = cfg.Recognition
	pc.Status = cfg.Status
	pc.Hashing = cfg.Hashing
	pc.Divergence = cfg.Divergence
	pc.Completeness = cfg.Completeness
	return pc
}

// ReadKey reads the HMAC key named by hashing.key_file or hashing.key_env, as the
// processor does at start; nil means plain SHA-256. Errors name the file or the variable,
// never the key.
func (cfg *PolicyConfig) ReadKey() ([]byte, error) {
	return readKey(cfg.Hashing)
}
