package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// AttributesConfig lists, for each attempt field, the span attributes it is read from, in
// order: the first present wins. An entry `key#a.b` reads the element a.b inside the
// attribute (a map or a JSON string). Setting a key replaces its whole default list.
type AttributesConfig struct {
	// CallID: default [gen_ai.tool.call.id, tool_use_id, tool.id, ai.toolCall.id, span_id].
	CallID []string `mapstructure:"call_id"`
	// Attempt: default [attempt, retry.attempt, gen_ai.tool.call.attempt].
	Attempt []string `mapstructure:"attempt"`
	// ToolName: default [gen_ai.tool.name, tool.name, tool_name, ai.toolCall.name,
	// traceloop.entity.name, request#params.name].
	ToolName []string `mapstructure:"tool_name"`
	// Arguments: default [gen_ai.tool.call.arguments, ai.toolCall.args, input.value,
	// traceloop.entity.input#arguments, request#params.arguments, tool_input].
	Arguments []string `mapstructure:"arguments"`
	// Result: default [gen_ai.tool.call.result, ai.toolCall.result, output.value,
	// traceloop.entity.output, response#result, tool_response].
	Result []string `mapstructure:"result"`
	// ArgsHash: a hash the span already carries. Default [args_hash].
	ArgsHash []string `mapstructure:"args_hash"`
	// ResultHash: default [result_hash].
	ResultHash []string `mapstructure:"result_hash"`
	// IdempotencyKey: default [idempotency_key, idempotency.key,
	// http.request.header.idempotency-key].
	IdempotencyKey []string `mapstructure:"idempotency_key"`
	// IdemHash: default [idem_hash].
	IdemHash []string `mapstructure:"idem_hash"`
	// RunID: default [run_id, gen_ai.conversation.id, session.id].
	RunID []string `mapstructure:"run_id"`
	// TokensIn: default [token_in, tokens_in, gen_ai.usage.input_tokens].
	TokensIn []string `mapstructure:"tokens_in"`
	// TokensOut: default [token_out, tokens_out, gen_ai.usage.output_tokens].
	TokensOut []string `mapstructure:"tokens_out"`
	// SideEffect: default [side_effect].
	SideEffect []string `mapstructure:"side_effect"`
	// Status: the instrumentation's own outcome field. Default [status].
	Status []string `mapstructure:"status"`
	// Success: a boolean outcome (Claude Code). Default [success].
	Success []string `mapstructure:"success"`
	// ReadAsset: the asset a span read, after divergence.read_asset_attribute. Default
	// [retrystorm.read.asset].
	ReadAsset []string `mapstructure:"read_asset"`
}

func defaultAttributes() AttributesConfig {
	s := toolspan.DefaultConfig().Sources
	return AttributesConfig{
		CallID: s.CallID, Attempt: s.Attempt, ToolName: s.ToolName, Arguments: s.Arguments, Result: s.Result,
		ArgsHash: s.ArgsHash, ResultHash: s.ResultHash, IdempotencyKey: s.IdempotencyKey, IdemHash: s.IdemHash,
		RunID: s.RunID, TokensIn: s.TokensIn, TokensOut: s.TokensOut, SideEffect: s.SideEffect,
		Status: s.Status, Success: s.Success, ReadAsset: s.ReadAsset,
	}
}

func (a *AttributesConfig) lists() map[string][]string {
	return map[string][]string{
		"call_id": a.CallID, "attempt": a.Attempt, "tool_name": a.ToolName, "arguments": a.Arguments,
		"result": a.Result, "args_hash": a.ArgsHash, "result_hash": a.ResultHash,
		"idempotency_key": a.IdempotencyKey, "idem_hash": a.IdemHash, "run_id": a.RunID,
		"tokens_in": a.TokensIn, "tokens_out": a.TokensOut, "side_effect": a.SideEffect,
		"status": a.Status, "success": a.Success, "read_asset": a.ReadAsset,
	}
}

func (a *AttributesConfig) validate() error {
	var errs error
	lists := a.lists()
	for _, name := range sortedKeys(lists) {
		for i, src := range lists[name] {
			key, _, _ := strings.Cut(src, "#")
			if strings.TrimSpace(key) == "" {
				errs = errors.Join(errs, fmt.Errorf("attributes.%s[%d] must name an attribute, got %q", name, i, src))
			}
		}
	}
	return errs
}

// RecognitionConfig says which spans are tool-call attempts. Setting a key replaces its whole
// default list.
type RecognitionConfig struct {
	// ToolSpans are the rules; a span matching any rule is a tool span. Default: one rule per
	// row of the input-shapes table (gen_ai.operation.name=execute_tool,
	// mastra.span.type=tool_call, mcp.method.name=tools/call, traceloop.span.kind=tool,
	// openinference.span.kind=TOOL, span name ai.toolCall, span name claude_code.tool, span
	// name prefix "MCP request: tools/call", attribute tool_name present).
	ToolSpans []ToolSpanRuleConfig `mapstructure:"tool_spans"`
	// ToolNamePrefixes are span-name prefixes stripped to find the tool name when no
	// tool-name attribute is present. Default ["MCP request: tools/call ", "MCP send
	// tools/call ", "tools/call ", "execute_tool "].
	ToolNamePrefixes []string `mapstructure:"tool_name_prefixes"`
	// ToolNameSuffixes are span-name suffixes stripped likewise. Default [".tool"].
	ToolNameSuffixes []string `mapstructure:"tool_name_suffixes"`
}

// ToolSpanRuleConfig is one recognition rule: exactly one of attribute, span_name and
// span_name_prefix.
type ToolSpanRuleConfig struct {
	// Attribute matches spans carrying this attribute (with Value, when set). No default.
	Attribute string `mapstructure:"attribute"`
	// Value is the attribute value to match; empty matches any value. No default.
	Value string `mapstructure:"value"`
	// SpanName matches spans with exactly this name. No default.
	SpanName string `mapstructure:"span_name"`
	// SpanNamePrefix matches spans whose name starts with this. No default.
	SpanNamePrefix string `mapstructure:"span_name_prefix"`
}

func defaultRecognition() RecognitionConfig {
	d := toolspan.DefaultConfig()
	rc := RecognitionConfig{ToolNamePrefixes: d.ToolNamePrefixes, ToolNameSuffixes: d.ToolNameSuffixes}
	for _, r := range d.ToolSpans {
		rc.ToolSpans = append(rc.ToolSpans, ToolSpanRuleConfig{Attribute: r.Attribute, Value: r.Value, SpanName: r.SpanName, SpanNamePrefix: r.SpanNamePrefix})
	}
	return rc
}

func (r *RecognitionConfig) validate() error {
	var errs error
	if len(r.ToolSpans) == 0 {
		errs = errors.New("recognition.tool_spans must list at least one rule")
	}
	for i, rule := range r.ToolSpans {
		set := 0
		for _, v := range []string{rule.Attribute, rule.SpanName, rule.SpanNamePrefix} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			errs = errors.Join(errs, fmt.Errorf("recognition.tool_spans[%d] must set exactly one of attribute, span_name, span_name_prefix", i))
		}
		if rule.Value != "" && rule.Attribute == "" {
			errs = errors.Join(errs, fmt.Errorf("recognition.tool_spans[%d].value needs attribute", i))
		}
	}
	return errs
}

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
	a := cfg.Attributes
	readAsset := a.ReadAsset
	if ra := cfg.Divergence.ReadAssetAttribute; ra != "" && !slices.Contains(readAsset, ra) {
		readAsset = append([]string{ra}, readAsset...)
	}
	ac.Recognition = toolspan.Config{
		ToolNamePrefixes: cfg.Recognition.ToolNamePrefixes,
		ToolNameSuffixes: cfg.Recognition.ToolNameSuffixes,
		Sources: toolspan.Sources{
			CallID: a.CallID, Attempt: a.Attempt, ToolName: a.ToolName, Arguments: a.Arguments, Result: a.Result,
			ArgsHash: a.ArgsHash, ResultHash: a.ResultHash, IdempotencyKey: a.IdempotencyKey, IdemHash: a.IdemHash,
			RunID: a.RunID, TokensIn: a.TokensIn, TokensOut: a.TokensOut, SideEffect: a.SideEffect,
			Status: a.Status, Success: a.Success, ReadAsset: readAsset,
		},
	}
	for _, r := range cfg.Recognition.ToolSpans {
		ac.Recognition.ToolSpans = append(ac.Recognition.ToolSpans, toolspan.Rule{Attribute: r.Attribute, Value: r.Value, SpanName: r.SpanName, SpanNamePrefix: r.SpanNamePrefix})
	}
	ac.StormThreshold = cfg.StormThreshold
	ac.OverrideOK = cfg.Status.OverrideOK
	ac.Key = key
	d := cfg.Divergence
	ac.Findings.CaveatAttribute = d.CaveatAttribute
	ac.Findings.CitedAssetsAttribute = d.CitedAssetsAttribute
	ac.Findings.StaleCache = findings.StaleCacheConfig{MaxDurationRatio: d.StaleCache.MaxDurationRatio, MaxDuration: d.StaleCache.MaxDuration, MinAge: d.StaleCache.MinAge}
	ac.Findings.Required = 0
	for _, name := range cfg.Completeness.Required {
		ac.Findings.Required |= toolspan.FieldNames[name]
	}
	return ac
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
