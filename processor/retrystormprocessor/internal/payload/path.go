package payload

import (
	"bytes"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// CanonicalValuePath returns the canonical JSON of the element at path inside v, where v
// is a map or a string holding a JSON object. It reports false when the element is absent,
// so callers can fall through to their next source.
func CanonicalValuePath(v pcommon.Value, path []string) ([]byte, bool) {
	if len(path) == 0 {
		return CanonicalValue(v), true
	}
	switch v.Type() {
	case pcommon.ValueTypeMap:
		cur := v
		for _, p := range path {
			if cur.Type() != pcommon.ValueTypeMap {
				return nil, false
			}
			next, ok := cur.Map().Get(p)
			if !ok {
				return nil, false
			}
			cur = next
		}
		return CanonicalValue(cur), true
	case pcommon.ValueTypeStr:
		if !looksLikeJSONContainer(v.Str()) {
			return nil, false
		}
		dec := json.NewDecoder(strings.NewReader(v.Str()))
		dec.UseNumber()
		var doc any
		if dec.Decode(&doc) != nil {
			return nil, false
		}
		for _, p := range path {
			m, ok := doc.(map[string]any)
			if !ok {
				return nil, false
			}
			if doc, ok = m[p]; !ok {
				return nil, false
			}
		}
		// An element holding JSON in a string hashes like the same element as a map,
		// matching CanonicalValue.
		if inner, ok := doc.(string); ok && looksLikeJSONContainer(inner) {
			if out, err := canonicalAppend(nil, []byte(inner)); err == nil {
				return out, true
			}
		}
		var buf bytes.Buffer
		if writeCanonical(&buf, doc, 0) != nil {
			return nil, false
		}
		return buf.Bytes(), true
	}
	return nil, false
}
