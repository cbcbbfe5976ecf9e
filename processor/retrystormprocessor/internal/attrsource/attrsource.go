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
// or a JSON string), e.g. the arguments inside a JSON-RPC request; an entry
// `event:NAME:key` reads attribute key of the span's first event called NAME (Strands
// Agents records a tool's arguments and result only in events). Setting a key replaces
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
	// traceloop.entity.input#arguments, traceloop.entity.input#args, traceloop.entity.input#kwargs,
	// request#params.arguments, tool_input, event:gen_ai.tool.message:content].
	Arguments []string `mapstructure:"arguments"`
	// Result: default [gen_ai.tool.call.result, ai.toolCall.result,
	// output.value#output.kwargs.content, output.value,
	// traceloop.entity.output#kwargs.content, traceloop.entity.output, response#result,
	// tool_response, event:gen_ai.choice:message]. LangChain's ToolMessage is read for its
	// content where there is one.
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
	// ToolStatus: the tool's own report of its outcome, where a value among
	// status.tool_error_values says it failed (like an isError result) and any other value
	// says nothing. Default [gen_ai.tool.status, traceloop.entity.output#kwargs.status].
	ToolStatus []string `mapstructure:"tool_status"`
	// ReadAsset: the asset a span read, after divergence.read_asset_attribute. Default
	// [retrystorm.read.asset].
	ReadAsset []string `mapstructure:"read_asset"`
}

// Defaults covers the attributes of every instrumentation shape the processor recognises.
func Defaults() Lists {
	return Lists{
		CallID:   []string{"gen_ai.tool.call.id", "tool_use_id", "tool.id", "tool.call.id", "tool_call.id", "ai.toolCall.id", "span_id"},
		Attempt:  []string{"attempt", "retry.attempt", "gen_ai.tool.call.attempt", "adk.node.attempt"},
		ToolName: []string{"gen_ai.tool.name", "tool.name", "tool_name", "ai.toolCall.name", "traceloop.entity.name", "request#params.name"},
		Arguments: []string{"gen_ai.tool.call.arguments#inputs", "gen_ai.tool.call.arguments", "ai.toolCall.args", "tool_call.function.arguments", "input.value",
			"traceloop.entity.input#arguments", "traceloop.entity.input#args", "traceloop.entity.input#kwargs", "request#params.arguments", "tool_input",
			"tool_arguments", "gcp.vertex.agent.tool_call_args", "event:gen_ai.tool.message:content"},
		Result: []string{"gen_ai.tool.call.result#output.kwargs.content", "gen_ai.tool.call.result", "ai.toolCall.result",
			"output.value#output.kwargs.content", "output.value#data.content", "output.value",
			"traceloop.entity.output#kwargs.content", "traceloop.entity.output#result", "traceloop.entity.output", "response#result", "tool_response",
			"gcp.vertex.agent.tool_response", "event:gen_ai.choice:message"},
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
		ToolStatus: []string{"gen_ai.tool.status", "traceloop.entity.output#kwargs.status", "gen_ai.tool.call.result#output.kwargs.status",
			"output.value#data.status"},
		ReadAsset: []string{DefaultReadAsset},
	}
}

// byKey names each list by its configuration key.
func (l *Lists) byKey() map[string][]string {
	return map[string][]string{
		"call_id": l.CallID, "attempt": l.Attempt, "tool_name": l.ToolName, "arguments": l.Arguments,
		"result": l.Result, "args_hash": l.ArgsHash, "result_hash": l.ResultHash,
		"idempotency_key": l.IdempotencyKey, "idem_hash": l.IdemHash, "run_id": l.RunID,
		"tokens_in": l.TokensIn, "tokens_out": l.TokensOut, "side_effect": l.SideEffect,
		"status": l.Status, "success": l.Success, "tool_status": l.ToolStatus, "read_asset": l.ReadAsset,
	}
}

// Named is every list by its configuration key (call_id, arguments, …).
func (l *Lists) Named() map[string][]string { return l.byKey() }

// ValidateAt checks the block found at key (attributes): it reports every entry that names
// no attribute, as key.list[i], lists in the order of their keys. It is not Validate, as
// with every block: confmap would call that too, and put the path before errors that name
// it.
func (l *Lists) ValidateAt(parent string) error {
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
// inside it when the entry reads one. With Event set, the key is an attribute of the
// span's first event of that name, not of the span.
type Source struct {
	Key   string
	Path  []string
	Event string
}

// EventPrefix starts an entry that reads an event's attribute: `event:NAME:key`.
const EventPrefix = "event:"

// Parse reads one entry, `key`, `key#a.b`, `event:NAME:key` or `event:NAME:key#a.b`. An
// event entry without a name or a key parses to an empty Key, which ValidateKeys reports.
func Parse(entry string) Source {
	var event string
	if rest, ok := strings.CutPrefix(entry, EventPrefix); ok {
		name, attr, found := strings.Cut(rest, ":")
		if !found || strings.TrimSpace(name) == "" {
			return Source{}
		}
		event, entry = name, attr
	}
	key, path, found := strings.Cut(entry, "#")
	src := Source{Key: key, Event: event}
	if found && path != "" {
		src.Path = strings.Split(path, ".")
	}
	return src
}

// String is the entry src was parsed from.
func (src Source) String() string {
	s := src.Key
	if len(src.Path) > 0 {
		s += "#" + strings.Join(src.Path, ".")
	}
	if src.Event != "" {
		s = EventPrefix + src.Event + ":" + s
	}
	return s
}

// ParseList reads every entry of list.
func ParseList(list []string) []Source {
	out := make([]Source, 0, len(list))
	for _, entry := range list {
		out = append(out, Parse(entry))
	}
	return out
}

// RawKeys returns the span attribute keys of lists, without element paths and each once,
// in order of first appearance: the keys that redaction deletes. Event entries name no
// span attribute and are left out (events holding payloads are redaction's message
// events).
func RawKeys(lists ...[]string) []string {
	var keys []string
	seen := map[string]bool{}
	for _, list := range lists {
		for _, entry := range list {
			src := Parse(entry)
			key := src.Key
			if src.Event != "" || key == "" {
				continue
			}
			if !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
	}
	return keys
}
