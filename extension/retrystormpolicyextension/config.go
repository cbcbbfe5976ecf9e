package retrystormpolicyextension // import "github.com/retrystorm/retrystorm/extension/retrystormpolicyextension"

import (
	"fmt"

	"go.opentelemetry.io/collector/confmap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

// Config is the extension's configuration: the retry_storm processor's analysis settings
// under the processor's keys, and the keep rate of each signal. The engine owns its
// configuration; the extension adds no translation layer.
type Config = retrystormprocessor.PolicyConfig

// PolicySettings is what one tail_sampling policy of type retry_storm may set in its own
// `retry_storm:` block. The analysis is the extension's, shared by all its policies; only
// the rates are a policy's.
type PolicySettings struct {
	// KeepPercent overrides the extension's keep_percent for this policy, key by key.
	// Default: the extension's.
	KeepPercent retrystormprocessor.KeepPercentConfig `mapstructure:"keep_percent"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// decodePolicySettings reads a policy's block over the extension's rates. An unknown key is
// an error: an analysis setting there would otherwise be silently ignored.
func decodePolicySettings(base retrystormprocessor.KeepPercentConfig, raw map[string]any) (PolicySettings, error) {
	s := PolicySettings{KeepPercent: base}
	if err := confmap.NewFromStringMap(raw).Unmarshal(&s); err != nil {
		return s, fmt.Errorf("decode the policy's retry_storm block (only keep_percent can be set per policy; "+
			"the analysis settings are the retry_storm extension's): %w", err)
	}
	return s, nil
}
