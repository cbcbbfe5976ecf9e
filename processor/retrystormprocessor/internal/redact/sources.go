package redact

import (
	"strings"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
)

// payloadSource is one configured source: an attribute key, and the path of an element
// inside it (a map or a JSON string) when the source reads one.
type payloadSource struct {
	attrsource.Source
	// flat is key+".", the prefix of flattened forms; query is the path as gjson reads it.
	flat, query string
}

func parseSources(list []string) []payloadSource {
	out := make([]payloadSource, 0, len(list))
	for _, src := range attrsource.ParseList(list) {
		parts := make([]string, len(src.Path))
		for i, p := range src.Path {
			parts[i] = gjson.Escape(p)
		}
		out = append(out, payloadSource{Source: src, flat: src.Key + ".", query: strings.Join(parts, ".")})
	}
	return out
}

// read returns what src reads of attribute k with value v: the value, or its element.
// Flattened forms of the key (key.a.b) are the value's own parts and are read whole.
func (src payloadSource) read(k string, v pcommon.Value) (pcommon.Value, bool) {
	if k != src.Key {
		if strings.HasPrefix(k, src.flat) {
			return v, true
		}
		return pcommon.Value{}, false
	}
	if len(src.Path) == 0 {
		return v, true
	}
	switch v.Type() {
	case pcommon.ValueTypeMap:
		cur := v
		for _, p := range src.Path {
			if cur.Type() != pcommon.ValueTypeMap {
				return pcommon.Value{}, false
			}
			next, ok := cur.Map().Get(p)
			if !ok {
				return pcommon.Value{}, false
			}
			cur = next
		}
		return cur, true
	case pcommon.ValueTypeStr:
		el := gjson.Get(v.Str(), src.query)
		if !el.Exists() {
			return pcommon.Value{}, false
		}
		if el.Type == gjson.String {
			return pcommon.NewValueStr(el.Str), true
		}
		return pcommon.NewValueStr(el.Raw), true
	}
	return pcommon.Value{}, false
}
