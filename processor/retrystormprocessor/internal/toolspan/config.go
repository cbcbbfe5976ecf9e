// Package toolspan recognises tool-call attempt spans in the shapes real instrumentations
// emit and reads each attempt's fields from ordered attribute sources.
package toolspan // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"

import (
	"errors"
	"fmt"
	"strings"

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
	// NotToolSpans are spans a tool_spans rule matches that are no tool-call attempt. Default:
	// span name mcp_tools (OpenAI Agents JS lists an MCP server's tools in it once a turn,
	// and OpenInference marks it openinference.span.kind=TOOL, with no tool name) and span
	// name prefix "handoff to " (OpenInference marks an OpenAI Agents handoff a TOOL span).
	NotToolSpans []Rule `mapstructure:"not_tool_spans"`
	// ToolNamePrefixes are span-name prefixes stripped to find the tool name when no
	// tool-name attribute is present. Default ["MCP request: tools/call ", "MCP send
	// tools/call ", "tools/call ", "execute_tool "].
	ToolNamePrefixes []string `mapstructure:"tool_name_prefixes"`
	// ToolNameSuffixes are span-name suffixes stripped likewise. Default [".tool"].
	ToolNameSuffixes []string `mapstructure:"tool_name_suffixes"`
	// AgentSpans are the rules recognising an agent span: a tool call belongs to its
	// nearest agent ancestor (agent-level chains, unrecovered_failure), else to the top of
	// its ancestor chain. An empty list uses the top of the chain. Default
	// gen_ai.operation.name=invoke_agent, openinference.span.kind=AGENT,
	// traceloop.span.kind=agent, mastra.span.type=agent_run, Vercel AI SDK's legacy
	// ai.operationId=ai.generateText and ai.streamText, and span name prefix "Agent run:"
	// (Logfire's OpenAI Agents integration).
	AgentSpans []Rule `mapstructure:"agent_spans"`
	// FollowModel finds tool calls from what the model asked for.
	FollowModel FollowModel `mapstructure:"follow_model"`
}

// FollowModel configures following the model: the tool requests and responses recorded in
// the trace's message structures are matched to the spans that executed them, recognised
// by a rule or not (ANALYSIS.md, "Following the model").
type FollowModel struct {
	// Enabled follows the model. Default true.
	Enabled bool `mapstructure:"enabled"`
	// OfferedTools: in a trace that records no request (content capture off), a span named
	// for a tool the model was offered is an attempt. Default true.
	OfferedTools bool `mapstructure:"offered_tools"`
	// HandoffPrefixes are prefixes of the tool names under which an SDK hands the
	// conversation to another agent: no tool call. Default ["transfer_to_"] (OpenAI Agents).
	HandoffPrefixes []string `mapstructure:"handoff_prefixes"`
}

// DefaultFollowModel follows the model, offered tools too.
func DefaultFollowModel() FollowModel {
	return FollowModel{Enabled: true, OfferedTools: true, HandoffPrefixes: []string{"transfer_to_"}}
}

// ValidateAt checks the block found at key (recognition): it reports an empty tool_spans
// list, an empty follow_model.handoff_prefixes entry, and every rule of tool_spans,
// not_tool_spans and agent_spans that does not set exactly one matcher, as
// key.tool_spans[i]. It is not Validate, as with every block: confmap would call that
// too, and put the path before errors that name it.
func (r *Recognition) ValidateAt(parent string) error {
	var errs error
	if len(r.ToolSpans) == 0 {
		errs = fmt.Errorf("%s.tool_spans must list at least one rule", parent)
	}
	for i, p := range r.FollowModel.HandoffPrefixes {
		if strings.TrimSpace(p) == "" {
			errs = errors.Join(errs, fmt.Errorf("%s.follow_model.handoff_prefixes[%d] must not be empty", parent, i))
		}
	}
	return errors.Join(errs, validateRules(parent+".tool_spans", r.ToolSpans), validateRules(parent+".not_tool_spans", r.NotToolSpans),
		validateRules(parent+".agent_spans", r.AgentSpans))
}

func validateRules(list string, rules []Rule) error {
	var errs error
	for i, rule := range rules {
		set := 0
		for _, v := range []string{rule.Attribute, rule.SpanName, rule.SpanNamePrefix} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			errs = errors.Join(errs, fmt.Errorf("%s[%d] must set exactly one of attribute, span_name, span_name_prefix", list, i))
		}
		if rule.Value != "" && rule.Attribute == "" {
			errs = errors.Join(errs, fmt.Errorf("%s[%d].value needs attribute", list, i))
		}
	}
	return errs
}

// StatusConfig configures the isError status remap: the processor's status block.
type StatusConfig struct {
	// OverrideOK lets an isError result (or a tool's own failure report) turn an explicit
	// OK span status into ERROR. Default true.
	OverrideOK bool `mapstructure:"override_ok"`
	// ToolErrorValues are the values of an attributes.tool_status source that say the
	// tool failed (ignoring case and surrounding white space); the attempt then fails and
	// is remapped like an isError result. Default [error].
	ToolErrorValues []string `mapstructure:"tool_error_values"`
}

// DefaultStatus remaps, and reads a tool_status of "error" as a failure.
func DefaultStatus() StatusConfig {
	return StatusConfig{OverrideOK: true, ToolErrorValues: DefaultToolErrorValues()}
}

// ValidateAt checks the block found at key (status), naming each key in full. It is not
// Validate: confmap would call that too, and put the path before errors that name it.
func (s *StatusConfig) ValidateAt(key string) error {
	var errs error
	for i, v := range s.ToolErrorValues {
		if strings.TrimSpace(v) == "" {
			errs = errors.Join(errs, fmt.Errorf("%s.tool_error_values[%d] must not be empty", key, i))
		}
	}
	return errs
}

// Config is what recognition and extraction need.
type Config struct {
	Recognition
	Sources attrsource.Lists
	// ToolErrorValues are the values of a tool_status source that say the tool failed,
	// matched ignoring case and surrounding white space.
	ToolErrorValues []string
}

// DefaultConfig recognises every instrumentation shape the processor knows and reads
// attrsource.Defaults.
func DefaultConfig() Config {
	return Config{
		Recognition:     DefaultRecognition(),
		Sources:         attrsource.Defaults(),
		ToolErrorValues: DefaultToolErrorValues(),
	}
}

// DefaultToolErrorValues is what Strands' gen_ai.tool.status and LangChain's ToolMessage
// status say on a failure.
func DefaultToolErrorValues() []string { return []string{"error"} }

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
			{SpanNamePrefix: "MCP send tools/call"},
			{Attribute: "tool_name"},
		},
		NotToolSpans:     []Rule{{SpanName: "mcp_tools"}, {SpanNamePrefix: "handoff to "}},
		ToolNamePrefixes: []string{"MCP request: tools/call ", "MCP send tools/call ", "tools/call ", "execute_tool "},
		ToolNameSuffixes: []string{".tool"},
		AgentSpans: []Rule{
			{Attribute: "gen_ai.operation.name", Value: "invoke_agent"},
			{Attribute: "openinference.span.kind", Value: "AGENT"},
			{Attribute: "traceloop.span.kind", Value: "agent"},
			{Attribute: "mastra.span.type", Value: "agent_run"},
			{Attribute: "ai.operationId", Value: "ai.generateText"},
			{Attribute: "ai.operationId", Value: "ai.streamText"},
			{SpanNamePrefix: "Agent run:"},
		},
		FollowModel: DefaultFollowModel(),
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
