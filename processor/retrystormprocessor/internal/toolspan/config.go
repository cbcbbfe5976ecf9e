// Package toolspan recognises tool-call attempt spans in the shapes real instrumentations
// emit and reads each attempt's fields from ordered attribute sources.
package toolspan // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"

import "strings"

// Rule recognises a tool span. Exactly one of Attribute, SpanName or SpanNamePrefix is
// set; with Attribute, an empty Value means "present with any value".
type Rule struct {
	Attribute      string
	Value          string
	SpanName       string
	SpanNamePrefix string
}

// Sources are ordered attribute lists, first present wins. An entry `key#a.b` reads the
// element a.b inside the attribute (a map or a JSON string), e.g. the arguments inside a
// JSON-RPC request.
type Sources struct {
	CallID         []string
	Attempt        []string
	ToolName       []string
	Arguments      []string
	Result         []string
	ArgsHash       []string
	ResultHash     []string
	IdempotencyKey []string
	IdemHash       []string
	RunID          []string
	TokensIn       []string
	TokensOut      []string
	SideEffect     []string
	Status         []string
	Success        []string
	ReadAsset      []string
}

// Config is what recognition and extraction need.
type Config struct {
	ToolSpans []Rule
	// ToolNamePrefixes are span-name prefixes (and ToolNameSuffixes suffixes) stripped to
	// find the tool name when no tool-name attribute is present.
	ToolNamePrefixes []string
	ToolNameSuffixes []string
	Sources          Sources
}

// DefaultConfig covers every row of DESIGN.md's input-shapes table.
func DefaultConfig() Config {
	return Config{
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
		Sources: Sources{
			CallID:   []string{"gen_ai.tool.call.id", "tool_use_id", "tool.id", "ai.toolCall.id", "span_id"},
			Attempt:  []string{"attempt", "retry.attempt", "gen_ai.tool.call.attempt"},
			ToolName: []string{"gen_ai.tool.name", "tool.name", "tool_name", "ai.toolCall.name", "traceloop.entity.name", "request#params.name"},
			Arguments: []string{"gen_ai.tool.call.arguments", "ai.toolCall.args", "input.value",
				"traceloop.entity.input#arguments", "request#params.arguments", "tool_input"},
			Result: []string{"gen_ai.tool.call.result", "ai.toolCall.result", "output.value",
				"traceloop.entity.output", "response#result", "tool_response"},
			ArgsHash:       []string{"args_hash"},
			ResultHash:     []string{"result_hash"},
			IdempotencyKey: []string{"idempotency_key", "idempotency.key", "http.request.header.idempotency-key"},
			IdemHash:       []string{"idem_hash"},
			RunID:          []string{"run_id", "gen_ai.conversation.id", "session.id"},
			TokensIn:       []string{"token_in", "tokens_in", "gen_ai.usage.input_tokens"},
			TokensOut:      []string{"token_out", "tokens_out", "gen_ai.usage.output_tokens"},
			SideEffect:     []string{"side_effect"},
			Status:         []string{"status"},
			Success:        []string{"success"},
			ReadAsset:      []string{"retrystorm.read.asset"},
		},
	}
}

// source is one parsed entry of a Sources list.
type source struct {
	key  string
	path []string
	// id is the key's slot in the Extractor's attribute index.
	id int32
}

func parseSources(list []string) []source {
	out := make([]source, 0, len(list))
	for _, s := range list {
		key, path, found := strings.Cut(s, "#")
		src := source{key: key}
		if found && path != "" {
			src.path = strings.Split(path, ".")
		}
		out = append(out, src)
	}
	return out
}

// RawKeys returns the attribute keys of sources, without element paths: the keys that
// redaction deletes.
func RawKeys(lists ...[]string) []string {
	var keys []string
	seen := map[string]bool{}
	for _, list := range lists {
		for _, s := range list {
			key, _, _ := strings.Cut(s, "#")
			if !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
	}
	return keys
}
