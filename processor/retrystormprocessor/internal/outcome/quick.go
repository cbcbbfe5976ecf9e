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

// stringFlagFree scans s once: every backslash must not start a \u escape, and every
// `"is` must not start a flag name, unless that flag is followed by the value false.
func stringFlagFree(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] == 'u' {
				return false
			}
			i++
		case '"':
			rest := s[i:]
			var key string
			switch {
			case strings.HasPrefix(rest, `"isError"`):
				key = `"isError"`
			case strings.HasPrefix(rest, `"is_error"`):
				key = `"is_error"`
			default:
				continue
			}
			after := skipJSONSpace(rest[len(key):])
			if !strings.HasPrefix(after, ":") {
				return false
			}
			after = skipJSONSpace(after[1:])
			if !strings.HasPrefix(after, "false") {
				return false
			}
			i = len(s) - len(after) + len("false") - 1
		}
	}
	return true
}

func skipJSONSpace(s string) string {
	return strings.TrimLeft(s, " \t\r\n")
}
