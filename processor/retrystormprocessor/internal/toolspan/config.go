// Package toolspan recognises tool-call attempt spans in the shapes real instrumentations
// emit and reads each attempt's fields from ordered attribute sources.
package toolspan // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"

import (
	"errors"
	"fmt"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
)

// Rule is one recognition rule: exactly one of attribute, span_name and
// span_name_prefix; with Attribute, an empty Value means "present with any value".
type Rule struct {
	// Attribute matches spans carrying this attribute (with Value, when set). No default.
	Attribute string `mapstructure:"attribute"`
	// Value is the attribute value to match; empty matches any value. No default.
	Value string `mapstructure:"value"`
	// SpanName matches spans with exactly this name. No default.
	SpanName string `mapstructure:"span_name"`
	// SpanNamePrefix matches spans whose name starts with this. No default.
	SpanNamePrefix string `mapstructure:"span_name_prefix"`
}

// Recognition says which spans are tool-call attempts. Setting a key replaces its whole
// default list.
type Recognition struct {
	// ToolSpans are the rules; a span matching any rule is a tool span. Default: one rule per
	// instrumentation shape (gen_ai.operation.name=execute_tool,
	// mastra.span.type=tool_call, mcp.method.name=tools/call, traceloop.span.kind=tool,
	// openinference.span.kind=TOOL, span name ai.toolCall, span name claude_code.tool, span
	// name prefix "MCP request: tools/call", attribute tool_name present).
	ToolSpans []Rule `mapstructure:"tool_spans"`
	// ToolNamePrefixes are span-name prefixes stripped to find the tool name when no
	// tool-name attribute is present. Default ["MCP request: tools/call ", "MCP send
	// tools/call ", "tools/call ", "execute_tool "].
	ToolNamePrefixes []string `mapstructure:"tool_name_prefixes"`
	// ToolNameSuffixes are span-name suffixes stripped likewise. Default [".tool"].
	ToolNameSuffixes []string `mapstructure:"tool_name_suffixes"`
}

// ValidateRules reports an empty rule list and every rule that does not set exactly one
// matcher, as parent.tool_spans[i]. It is not Validate: confmap would call that a second
// time.
func (r *Recognition) ValidateRules(parent string) error {
	var errs error
	if len(r.ToolSpans) == 0 {
		errs = fmt.Errorf("%s.tool_spans must list at least one rule", parent)
	}
	for i, rule := range r.ToolSpans {
		set := 0
		for _, v := range []string{rule.Attribute, rule.SpanName, rule.SpanNamePrefix} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			errs = errors.Join(errs, fmt.Errorf("%s.tool_spans[%d] must set exactly one of attribute, span_name, span_name_prefix", parent, i))
		}
		if rule.Value != "" && rule.Attribute == "" {
			errs = errors.Join(errs, fmt.Errorf("%s.tool_spans[%d].value needs attribute", parent, i))
		}
	}
	return errs
}

// Config is what recognition and extraction need.
type Config struct {
	Recognition
	Sources attrsource.Lists
}

// DefaultConfig recognises every instrumentation shape the processor knows and reads
// attrsource.Defaults.
func DefaultConfig() Config {
	return Config{
		Recognition: DefaultRecognition(),
		Sources:     attrsource.Defaults(),
	}
}

// DefaultRecognition has one rule per instrumentation shape the processor knows.
func DefaultRecognition() Recognition {
	return Recognition{
		ToolSpans: []Rule{
			{Attribute: "gen_ai.operation.name", Value: "execute_tool"},
			{Attribute: "mastra.span.type", Value: "tool_call"},
			{Attribute: "mcp.method.name", Value: "tools/call"},
			{Attribute: "traceloop.span.kind", Value: "tool"},
			{Attribute: "openinference.span.kind", Value: "TOOL"},
			{SpanName: "ai.toolCall"},
			{SpanName: "claude_code.tool"},
			{SpanNamePrefix: "MCP request: tools/call"},
			{Attribute: "tool_name"},
		},
		ToolNamePrefixes: []string{"MCP request: tools/call ", "MCP send tools/call ", "tools/call ", "execute_tool "},
		ToolNameSuffixes: []string{".tool"},
	}
}

// source is one parsed entry of a source list.
type source struct {
	attrsource.Source
	// id is the key's slot in the Extractor's attribute index.
	id int32
}

func parseSources(list []string) []source {
	out := make([]source, 0, len(list))
	for _, src := range attrsource.ParseList(list) {
		out = append(out, source{Source: src})
	}
	return out
}
