package outcome

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// FlagFree reports, without decoding JSON, that a result payload certainly carries no
// isError / is_error flag ScanResult would find. False means "maybe": ScanResult decides.
//
// A map is walked the way ScanResult reads it. A string is free when neither flag name
// appears, or when every appearance is followed by the value false; a `\u` escape could
// spell a flag name, so it makes the answer "maybe".
func FlagFree(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		return !mapFlag(v.Map(), 0)
	case pcommon.ValueTypeStr:
		return stringFlagFree(v.Str())
	}
	return true
}

// mapFlag mirrors scanAny on a pcommon.Map, without converting it to Go maps.
func mapFlag(m pcommon.Map, depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	for _, k := range []string{"isError", "is_error"} {
		if v, ok := m.Get(k); ok && valueFlagTrue(v) {
			return true
		}
	}
	for _, k := range []string{"result", "response", "output"} {
		if v, ok := m.Get(k); ok && v.Type() == pcommon.ValueTypeMap && mapFlag(v.Map(), depth+1) {
			return true
		}
	}
	return false
}

func valueFlagTrue(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeBool:
		return v.Bool()
	case pcommon.ValueTypeStr:
		return strings.EqualFold(v.Str(), "true")
	}
	return false
}

// stringFlagFree: no `\u` escape (it could spell a flag name) and every literal flag name
// followed by the value false. JSON is full of quotes, so the searches look for the rarer
// tail of each name ("Error\"", "_error\"") and then check the `"is` before it.
func stringFlagFree(s string) bool {
	return !strings.Contains(s, `\u`) && flagsFalse(s, `"is`, `Error"`) && flagsFalse(s, `"is`, `_error"`)
}

// flagsFalse reports that every occurrence of the key head+tail in s is followed, after
// optional JSON whitespace and a colon, by the literal false.
func flagsFalse(s, head, tail string) bool {
	for {
		i := strings.Index(s, tail)
		if i < 0 {
			return true
		}
		if i < len(head) || s[i-len(head):i] != head {
			s = s[i+len(tail):]
			continue
		}
		s = skipJSONSpace(s[i+len(tail):])
		if !strings.HasPrefix(s, ":") {
			return false
		}
		s = skipJSONSpace(s[1:])
		if !strings.HasPrefix(s, "false") {
			return false
		}
		s = s[len("false"):]
	}
}

func skipJSONSpace(s string) string {
	return strings.TrimLeft(s, " \t\r\n")
}
