package analysis // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Config is what an analysis reads, as the processor's configuration holds it: the
// storm threshold and the blocks of the packages the analysis uses, all at the root of
// the processor's configuration.
type Config struct {
	// StormThreshold is the number of attempts by one layer that makes a storm. Default 2.
	StormThreshold int `mapstructure:"storm_threshold"`
	// Attributes are the ordered attribute sources of each attempt field.
	Attributes attrsource.Lists `mapstructure:"attributes"`
	// Recognition says which spans are tool-call attempts.
	Recognition toolspan.Recognition `mapstructure:"recognition"`
	// Status configures the isError status remap.
	Status toolspan.StatusConfig `mapstructure:"status"`
	// Divergence configures the divergence findings.
	Divergence findings.DivergenceConfig `mapstructure:"divergence"`
	// Completeness configures the incomplete_record finding.
	Completeness findings.CompletenessConfig `mapstructure:"completeness"`
}

// DefaultConfig returns the processor's documented defaults (README, "Configuration").
func DefaultConfig() Config {
	return Config{
		StormThreshold: 2,
		Attributes:     attrsource.Defaults(),
		Recognition:    toolspan.DefaultRecognition(),
		Status:         toolspan.DefaultStatus(),
		Divergence:     findings.DefaultDivergence(),
		Completeness:   findings.DefaultCompleteness(),
	}
}

// ValidateAt checks the keys, which sit at the root of the processor's configuration
// (parent ""), naming each in full, and refuses a client input the processor writes
// (ClientInputs). It is not Validate: confmap would call that too, and put the path
// before errors that name it.
func (c *Config) ValidateAt(parent string) error {
	var errs error
	if c.StormThreshold < 2 {
		errs = fmt.Errorf("%s must be at least 2", key(parent, "storm_threshold"))
	}
	errs = errors.Join(errs, c.Attributes.ValidateAt(key(parent, "attributes")), c.Recognition.ValidateAt(key(parent, "recognition")),
		c.Status.ValidateAt(key(parent, "status")), c.Divergence.ValidateAt(key(parent, "divergence")),
		c.Completeness.ValidateAt(key(parent, "completeness")))
	for _, in := range c.clientInputs(parent) {
		if stormrecord.Written(in.attribute) {
			errs = errors.Join(errs, fmt.Errorf("%s: %s is written by retry_storm and cannot be read from clients' spans", in.where, in.attribute))
		}
	}
	return errs
}

func key(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// toolConfig is what recognition and extraction read of c: read_asset_attribute is tried
// before the read_asset sources.
func (c *Config) toolConfig() toolspan.Config {
	return toolspan.Config{
		Recognition:     c.Recognition,
		Sources:         c.Attributes.WithReadAsset(c.Divergence.ReadAssetAttribute),
		ToolErrorValues: c.Status.ToolErrorValues,
	}
}

// clientInput is one attribute the configuration reads from clients' spans, with the key
// that names it.
type clientInput struct {
	where, attribute string
}

// clientInputs are the attributes c reads from clients' spans and events: every attribute
// source, the recognition rules' attributes and the divergence attributes.
func (c *Config) clientInputs(parent string) []clientInput {
	var out []clientInput
	named := c.Attributes.Named()
	for _, name := range slices.Sorted(maps.Keys(named)) {
		for i, entry := range named[name] {
			out = append(out, clientInput{fmt.Sprintf("%s.%s[%d]", key(parent, "attributes"), name, i), attrsource.Parse(entry).Key})
		}
	}
	rules := func(list string, rs []toolspan.Rule) {
		for i, r := range rs {
			if r.Attribute != "" {
				out = append(out, clientInput{fmt.Sprintf("%s.%s[%d].attribute", key(parent, "recognition"), list, i), r.Attribute})
			}
		}
	}
	rules("tool_spans", c.Recognition.ToolSpans)
	rules("not_tool_spans", c.Recognition.NotToolSpans)
	rules("agent_spans", c.Recognition.AgentSpans)
	d, div := c.Divergence, key(parent, "divergence")
	return append(out,
		clientInput{div + ".caveat_attribute", d.CaveatAttribute},
		clientInput{div + ".cited_assets_attribute", d.CitedAssetsAttribute},
		clientInput{div + ".read_asset_attribute", d.ReadAssetAttribute})
}

// ClientInputs are the attributes c reads from clients' spans under retry_storm's
// namespace (retrystorm.answer.caveat, …), each once: the ones the processor must leave
// on arriving spans, where every other attribute under it is the processor's to write
// (processor README, "Security").
func (c *Config) ClientInputs() []string {
	var keys []string
	for _, in := range c.clientInputs("") {
		if strings.HasPrefix(in.attribute, stormrecord.Prefix) && !slices.Contains(keys, in.attribute) {
			keys = append(keys, in.attribute)
		}
	}
	return keys
}
