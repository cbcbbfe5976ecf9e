package redact

import (
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Messages flattened into one attribute per field (OpenInference's
// llm.input_messages.N.message.*, OpenLLMetry's gen_ai.prompt.N.* and
// gen_ai.completion.N.*) carry a tool call's arguments in a key ending in .arguments under
// a tool_calls list, and a tool response in the content of a message whose role is tool.

// flattenedKey splits key into the message it belongs to (prefix.N) and the rest, when it
// is under one of the prefixes.
func (r *Redactor) flattenedKey(key string) (message, rest string, ok bool) {
	for _, p := range r.flattened {
		if len(key) <= len(p)+2 || key[len(p)] != '.' || !strings.HasPrefix(key, p) {
			continue
		}
		i := len(p) + 1
		j := i
		for j < len(key) && key[j] >= '0' && key[j] <= '9' {
			j++
		}
		if j == i || j >= len(key) || key[j] != '.' {
			continue
		}
		return key[:j], key[j+1:], true
	}
	return "", "", false
}

// isFlattened reports whether key is a field of a flattened message.
func (r *Redactor) isFlattened(key string) bool {
	if len(r.flattened) == 0 {
		return false
	}
	_, _, ok := r.flattenedKey(key)
	return ok
}

// flattenedMessages rewrites the flattened messages of m and returns the replacements.
func (r *Redactor) flattenedMessages(m pcommon.Map) int {
	if len(r.flattened) == 0 {
		return 0
	}
	var roles map[string]string
	for k, v := range m.All() {
		msg, rest, ok := r.flattenedKey(k)
		if !ok {
			continue
		}
		if rest == "role" || rest == "message.role" {
			if roles == nil {
				roles = map[string]string{}
			}
			roles[msg] = strings.ToLower(strings.TrimSpace(v.AsString()))
		}
	}
	n := 0
	for k, v := range m.All() {
		msg, rest, ok := r.flattenedKey(k)
		if !ok {
			continue
		}
		last := rest[strings.LastIndexByte(rest, '.')+1:]
		switch {
		case messages.RoleOf(last)&messages.ArgKey != 0 && strings.Contains(rest, "tool_call"),
			messages.RoleOf(last)&messages.TextKey != 0 && messages.IsToolRole(roles[msg]):
			v.SetStr(r.rw.markValue(v))
			n++
		case messages.RoleOf(last)&messages.TextKey != 0 && !r.rw.keepText && v.Type() == pcommon.ValueTypeStr && v.Str() != "":
			v.SetStr(Scrubbed)
			n++
		}
	}
	return n
}
