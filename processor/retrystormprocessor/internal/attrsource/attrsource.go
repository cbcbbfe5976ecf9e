// Package attrsource defines where each field of a tool-call attempt is read from: an
// ordered list of span attributes per field, the first present wins. Configuration,
// extraction and redaction share this one definition.
package attrsource // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DefaultReadAsset is the attribute naming the asset a span read, by default both the
// read_asset list and the divergence's read-asset attribute.
const DefaultReadAsset = "retrystorm.read.asset"

// Lists lists, for each attempt field, the span attributes it is read from, in order: the
// first present wins. An entry `key#a.b` reads the element a.b inside the attribute (a map
// or a JSON string), e.g. the arguments inside a JSON-RPC request. Setting a key replaces
// its whole default list.
type Lists struct {
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

// Defaults covers the attributes of every instrumentation shape the processor recognises.
func Defaults() Lists {
	return Lists{
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
		ReadAsset:      []string{DefaultReadAsset},
	}
}

// byKey names each list by its configuration key.
func (l *Lists) byKey() map[string][]string {
	return map[string][]string{
		"call_id": l.CallID, "attempt": l.Attempt, "tool_name": l.ToolName, "arguments": l.Arguments,
		"result": l.Result, "args_hash": l.ArgsHash, "result_hash": l.ResultHash,
		"idempotency_key": l.IdempotencyKey, "idem_hash": l.IdemHash, "run_id": l.RunID,
		"tokens_in": l.TokensIn, "tokens_out": l.TokensOut, "side_effect": l.SideEffect,
		"status": l.Status, "success": l.Success, "read_asset": l.ReadAsset,
	}
}

// ValidateKeys reports every entry that names no attribute, as parent.list[i], lists in
// the order of their keys. It is not Validate: confmap would call that a second time.
func (l *Lists) ValidateKeys(parent string) error {
	var errs error
	lists := l.byKey()
	for _, name := range slices.Sorted(maps.Keys(lists)) {
		for i, entry := range lists[name] {
			if strings.TrimSpace(Parse(entry).Key) == "" {
				errs = errors.Join(errs, fmt.Errorf("%s.%s[%d] must name an attribute, got %q", parent, name, i, entry))
			}
		}
	}
	return errs
}

// WithReadAsset returns l with attribute tried before the ReadAsset list, unless it is
// empty or already listed.
func (l *Lists) WithReadAsset(attribute string) Lists {
	out := *l
	if attribute != "" && !slices.Contains(l.ReadAsset, attribute) {
		out.ReadAsset = append([]string{attribute}, l.ReadAsset...)
	}
	return out
}

// Payload returns the lists a tool payload is read from (arguments, result, idempotency
// key), in that order: what redaction removes.
func (l *Lists) Payload() [][]string {
	return [][]string{l.Arguments, l.Result, l.IdempotencyKey}
}

// Source is one parsed entry of a list: an attribute key, and the path of an element
// inside it when the entry reads one.
type Source struct {
	Key  string
	Path []string
}

// Parse reads one entry, `key` or `key#a.b`.
func Parse(entry string) Source {
	key, path, found := strings.Cut(entry, "#")
	src := Source{Key: key}
	if found && path != "" {
		src.Path = strings.Split(path, ".")
	}
	return src
}

// ParseList reads every entry of list.
func ParseList(list []string) []Source {
	out := make([]Source, 0, len(list))
	for _, entry := range list {
		out = append(out, Parse(entry))
	}
	return out
}

// RawKeys returns the attribute keys of lists, without element paths and each once, in
// order of first appearance: the keys that redaction deletes.
func RawKeys(lists ...[]string) []string {
	var keys []string
	seen := map[string]bool{}
	for _, list := range lists {
		for _, entry := range list {
			key := Parse(entry).Key
			if !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
	}
	return keys
}
