package outcome

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// FlagFree reports, without decoding JSON, that a result payload certainly carries no
// isError / is_error flag ScanResult would find. False means "maybe": ScanResult decides.
//
// A map is walked the way ScanResult reads it. A string is free when neither flag name
// appears, or when every appearance is followed by the value false, and no "error" member
// appears (a lone error fails the attempt too); a `\u` escape could spell a flag name, so
// it makes the answer "maybe".
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
	if e, ok := m.Get("error"); ok && m.Len() == 1 && loneErrorValue(e) {
		return true
	}
	for _, k := range []string{"result", "response", "output"} {
		if v, ok := m.Get(k); ok && v.Type() == pcommon.ValueTypeMap && mapFlag(v.Map(), depth+1) {
			return true
		}
	}
	return false
}

// loneErrorValue mirrors loneError on the value of a map's only member "error".
func loneErrorValue(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeEmpty, pcommon.ValueTypeBool:
		return false
	case pcommon.ValueTypeStr:
		return strings.TrimSpace(v.Str()) != ""
	}
	return true
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
//
// Most results hold no backslash: one vectorised byte search shows it, and the flag names
// are then found by searching for the rarer tail of each ("Error\"", "_error\"") and
// checking the `"is` before it. MCP results carry JSON inside JSON, full of escaped quotes,
// where a search for `\u` stops at every backslash: those are read in one pass.
func stringFlagFree(s string) bool {
	if strings.Contains(s, `"error"`) {
		return false // maybe a lone error ({"error": …}): ScanResult decides
	}
	if strings.IndexByte(s, '\\') < 0 {
		return flagsFalse(s, `"is`, `Error"`) && flagsFalse(s, `"is`, `_error"`)
	}
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

// flagsFalse reports that every occurrence of the key head+tail in s is followed by the
// value false (flagFalse). tail ends and head begins with a quote.
func flagsFalse(s, head, tail string) bool {
	for {
		i := strings.Index(s, tail)
		if i < 0 {
			return true
		}
		if i < len(head) || s[i-len(head):i] != head {
			// The tail's closing quote may open the next key.
			s = s[i+len(tail)-1:]
			continue
		}
		if s = s[i+len(tail):]; !flagFalse(s) {
			return false
		}
	}
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
