package findings // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// DivergenceConfig configures the divergence findings: the processor's divergence block.
type DivergenceConfig struct {
	// CaveatAttribute on an agent span (or root) marks a green answer that admits a failure,
	// silencing unrecovered_failure. Default retrystorm.answer.caveat.
	CaveatAttribute string `mapstructure:"caveat_attribute"`
	// CitedAssetsAttribute lists the assets an answer cites, for unbacked_citation.
	// Default retrystorm.answer.cited_assets.
	CitedAssetsAttribute string `mapstructure:"cited_assets_attribute"`
	// ReadAssetAttribute names the asset a span read; it is tried before
	// attributes.read_asset. Default retrystorm.read.asset.
	ReadAssetAttribute string `mapstructure:"read_asset_attribute"`
	// StaleCache bounds the stale_cache_suspect check.
	StaleCache stalecache.Config `mapstructure:"stale_cache"`
}

// CompletenessConfig configures the incomplete_record finding: the processor's
// completeness block.
type CompletenessConfig struct {
	// Required are the fields every attempt must carry. Default [tool_name]. The per-attempt
	// record (checkout.tool_attempts) needs [run_id, call_id, attempt, tool_name, args_hash, status].
	Required []string `mapstructure:"required"`
}

// DefaultDivergence returns the documented defaults (processor README, "Divergence and
// completeness").
func DefaultDivergence() DivergenceConfig {
	return DivergenceConfig{
		CaveatAttribute:      "retrystorm.answer.caveat",
		CitedAssetsAttribute: "retrystorm.answer.cited_assets",
		ReadAssetAttribute:   attrsource.DefaultReadAsset,
		StaleCache:           stalecache.DefaultConfig(),
	}
}

// DefaultCompleteness requires the tool name only: without it an attempt is no call.
func DefaultCompleteness() CompletenessConfig {
	return CompletenessConfig{Required: []string{"tool_name"}}
}

// ValidateAt checks the block found at key (divergence), naming each key in full. It is
// not Validate: confmap would call that too, and put the path before errors that name it.
func (d *DivergenceConfig) ValidateAt(key string) error {
	var errs error
	if d.CaveatAttribute == "" {
		errs = fmt.Errorf("%s.caveat_attribute must not be empty", key)
	}
	if d.CitedAssetsAttribute == "" {
		errs = errors.Join(errs, fmt.Errorf("%s.cited_assets_attribute must not be empty", key))
	}
	return errors.Join(errs, d.StaleCache.ValidateAt(key+".stale_cache"))
}

// ValidateAt checks the block found at key (completeness), naming each key in full.
func (c *CompletenessConfig) ValidateAt(key string) error {
	var errs error
	for i, name := range c.Required {
		if _, ok := toolspan.FieldNames[name]; !ok {
			errs = errors.Join(errs, fmt.Errorf("%s.required[%d] has unknown field %q (want one of %s)",
				key, i, name, strings.Join(slices.Sorted(maps.Keys(toolspan.FieldNames)), ", ")))
		}
	}
	return errs
}

// Rules are the checks' own terms for a divergence and a completeness block.
type Rules struct {
	CaveatAttribute      string
	CitedAssetsAttribute string
	// StaleCache bounds what counts as "far faster than its siblings" and "seen before".
	StaleCache stalecache.Config
	// Required are the fields every attempt must carry.
	Required toolspan.Field
	// Carried are the fields an attempt must carry when other attempts of its call do.
	Carried toolspan.Field
}

// DefaultCarried is the set of fields the incomplete_record rule looks for (ANALYSIS.md,
// "Findings").
const DefaultCarried = toolspan.FieldAttempt | toolspan.FieldArgsHash | toolspan.FieldIdemHash |
	toolspan.FieldRunID | toolspan.FieldStatus | toolspan.FieldTokensIn | toolspan.FieldTokensOut

// NewRules reads validated blocks: every required name is a field.
func NewRules(d DivergenceConfig, c CompletenessConfig) Rules {
	r := Rules{
		CaveatAttribute: d.CaveatAttribute, CitedAssetsAttribute: d.CitedAssetsAttribute,
		StaleCache: d.StaleCache, Carried: DefaultCarried,
	}
	for _, name := range c.Required {
		r.Required |= toolspan.FieldNames[name]
	}
	return r
}
