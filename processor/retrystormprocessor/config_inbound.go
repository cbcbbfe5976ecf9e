package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// clientInput is one attribute this configuration reads from clients' spans, with the key
// that names it.
type clientInput struct {
	where, attribute string
}

// clientInputs are the attributes the configuration reads from clients' spans and events:
// every attribute source, the recognition rules' attributes and the divergence attributes.
// Those under retry_storm's namespace (retrystorm.answer.caveat, …) stay on arriving spans;
// every other attribute there is the processor's to write (README, "Security").
func (cfg *Config) clientInputs() []clientInput {
	var out []clientInput
	named := cfg.Attributes.Named()
	for _, name := range sortedKeys(named) {
		for i, entry := range named[name] {
			out = append(out, clientInput{fmt.Sprintf("attributes.%s[%d]", name, i), attrsource.Parse(entry).Key})
		}
	}
	rules := func(list string, rs []toolspan.Rule) {
		for i, r := range rs {
			if r.Attribute != "" {
				out = append(out, clientInput{fmt.Sprintf("recognition.%s[%d].attribute", list, i), r.Attribute})
			}
		}
	}
	rules("tool_spans", cfg.Recognition.ToolSpans)
	rules("not_tool_spans", cfg.Recognition.NotToolSpans)
	rules("agent_spans", cfg.Recognition.AgentSpans)
	d := cfg.Divergence
	return append(out,
		clientInput{"divergence.caveat_attribute", d.CaveatAttribute},
		clientInput{"divergence.cited_assets_attribute", d.CitedAssetsAttribute},
		clientInput{"divergence.read_asset_attribute", d.ReadAssetAttribute})
}

// clientInputKeys are the attributes of clientInputs under retry_storm's namespace, each
// once: the ones the processor must leave on arriving spans.
func (cfg *Config) clientInputKeys() []string {
	var keys []string
	for _, in := range cfg.clientInputs() {
		if strings.HasPrefix(in.attribute, stormrecord.Prefix) && !slices.Contains(keys, in.attribute) {
			keys = append(keys, in.attribute)
		}
	}
	return keys
}

// validateClientInputs refuses an input that names an attribute the processor writes: it
// would let a client write it, and the storm_summary exporter and the storms connector read
// it as the processor's.
func (cfg *Config) validateClientInputs() error {
	var errs error
	for _, in := range cfg.clientInputs() {
		if stormrecord.Written(in.attribute) {
			errs = errors.Join(errs, fmt.Errorf("%s: %s is written by retry_storm and cannot be read from clients' spans", in.where, in.attribute))
		}
	}
	return errs
}
