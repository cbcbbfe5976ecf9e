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
// ("isError" or "is_error", quotes included) followed by the value false.
func stringFlagFree(s string) bool {
	// One pass: MCP results carry JSON inside JSON, so backslashes and underscores are
	// common, and a substring search per pattern stops at every one of them.
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] == 'u' {
				return false
			}
		case '"':
			if i+3 >= len(s) || s[i+1] != 'i' || s[i+2] != 's' {
				continue
			}
			var rest string
			switch {
			case strings.HasPrefix(s[i+3:], `Error"`):
				rest = s[i+3+len(`Error"`):]
			case strings.HasPrefix(s[i+3:], `_error"`):
				rest = s[i+3+len(`_error"`):]
			default:
				continue
			}
			if !flagFalse(rest) {
				return false
			}
		}
	}
	return true
}

// flagFalse reports that s, what follows a flag's key, is optional JSON whitespace, a
// colon and the literal false.
func flagFalse(s string) bool {
	s = skipJSONSpace(s)
	if !strings.HasPrefix(s, ":") {
		return false
	}
	return strings.HasPrefix(skipJSONSpace(s[1:]), "false")
}

func skipJSONSpace(s string) string {
	return strings.TrimLeft(s, " \t\r\n")
}
