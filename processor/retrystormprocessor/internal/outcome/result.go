package outcome

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxScanDepth bounds how deep the isError flag is looked for; MCP puts it at most two
// levels down (`response.result.isError`).
const maxScanDepth = 4

// maxTextLen bounds the description taken from a result's text.
const maxTextLen = 256

// ScanResult looks for `"isError": true` or `"is_error": true` in a result payload, a
// map or a JSON string, or a result that is a lone error ({"error": …}), and returns the result's text (MCP content text, or a `result`,
// `error` or `message` string) for the span description.
func ScanResult(v pcommon.Value) (isError bool, text string) {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		// The text is only wanted for a flagged result: convert the map only then.
		if !mapFlag(v.Map(), 0) {
			return false, ""
		}
		return scanAny(v.Map().AsRaw(), 0)
	case pcommon.ValueTypeStr:
		s := v.Str()
		// Parsing is the expensive part: skip it unless the flag can be there (an MCP result
		// says "isError": false on every success).
		if stringFlagFree(s) {
			return false, ""
		}
		var doc any
		if json.Unmarshal([]byte(s), &doc) != nil {
			return false, ""
		}
		return scanAny(doc, 0)
	}
	return false, ""
}

func scanAny(doc any, depth int) (bool, string) {
	m, ok := doc.(map[string]any)
	if !ok || depth > maxScanDepth {
		return false, ""
	}
	if flagTrue(m["isError"]) || flagTrue(m["is_error"]) || loneError(m) {
		return true, resultText(m)
	}
	for _, k := range []string{"result", "response", "output"} {
		if inner, ok := m[k].(map[string]any); ok {
			if isErr, text := scanAny(inner, depth+1); isErr {
				return true, text
			}
		}
	}
	return false, ""
}

// loneError reports a result that is an error and nothing else, {"error": …}: the Gemini
// API's convention for a function's failure, which Google ADK writes for a tool that
// threw (and a response turned into an error by an on_tool_error callback).
func loneError(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	switch e := m["error"].(type) {
	case nil, bool:
		return false
	case string:
		return strings.TrimSpace(e) != ""
	}
	return true
}

func flagTrue(v any) bool {
	switch t := v.(type) {
	case bool:
		return t
	case string:
		return strings.EqualFold(t, "true")
	}
	return false
}

func resultText(m map[string]any) string {
	if content, ok := m["content"].([]any); ok {
		for _, c := range content {
			if cm, ok := c.(map[string]any); ok {
				if s, ok := cm["text"].(string); ok && s != "" {
					return truncate(s)
				}
			}
		}
	}
	for _, k := range []string{"result", "error", "message"} {
		if s, ok := m[k].(string); ok && s != "" {
			return truncate(s)
		}
	}
	return ""
}

func truncate(s string) string {
	if len(s) <= maxTextLen {
		return s
	}
	cut := maxTextLen
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
