package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// AttributesConfig lists, for each attempt field, the span attributes it is read from, in
// order: the first present wins. An entry `key#a.b` reads the element a.b inside the
// attribute (a map or a JSON string). Setting a key replaces its whole default list. The
// engine reads the same lists: their keys and defaults are attrsource.Lists's.
type AttributesConfig = attrsource.Lists

// RecognitionConfig says which spans are tool-call attempts; its keys and defaults are
// toolspan.Recognition's. Setting a key replaces its whole default list.
type RecognitionConfig = toolspan.Recognition

// ToolSpanRuleConfig is one recognition rule: exactly one of attribute, span_name and
// span_name_prefix.
type ToolSpanRuleConfig = toolspan.Rule

func (c *CompletenessConfig) validate() error {
	var errs error
	for i, name := range c.Required {
		if _, ok := toolspan.FieldNames[name]; !ok {
			errs = errors.Join(errs, fmt.Errorf("completeness.required[%d] has unknown field %q (want one of %s)",
				i, name, strings.Join(sortedKeys(toolspan.FieldNames), ", ")))
		}
	}
	return errs
}

// analysisConfig is the engine's configuration; key is the HMAC key read at start.
func (cfg *Config) analysisConfig(key []byte) analysis.Config {
	ac := analysis.DefaultConfig()
	ac.Recognition = toolspan.Config{
		Recognition:     cfg.Recognition,
		Sources:         cfg.Attributes.WithReadAsset(cfg.Divergence.ReadAssetAttribute),
		ToolErrorValues: cfg.Status.ToolErrorValues,
	}
	ac.StormThreshold = cfg.StormThreshold
	ac.OverrideOK = cfg.Status.OverrideOK
	ac.Key = key
	d := cfg.Divergence
	ac.Findings.CaveatAttribute = d.CaveatAttribute
	ac.Findings.CitedAssetsAttribute = d.CitedAssetsAttribute
	ac.Findings.StaleCache = d.StaleCache
	ac.Findings.Required = 0
	for _, name := range cfg.Completeness.Required {
		ac.Findings.Required |= toolspan.FieldNames[name]
	}
	return ac
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
