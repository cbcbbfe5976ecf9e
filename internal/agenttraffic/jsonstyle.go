package agenttraffic

import (
	"cmp"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strings"
)

// jsonStyle is how an instrumentation's runtime writes a payload as JSON text. Real payloads
// are rarely canonical: JavaScript's JSON.stringify and Python's json.dumps keep the order
// in which the code built an object, and json.dumps puts a space after ',' and ':'. A
// simulator that wrote every payload canonical would spare the processor its
// canonicalising work and flatter every benchmark fed with it.
type jsonStyle uint8

const (
	// jsonSorted is Go's encoding/json: compact, keys sorted. Canonical for this
	// simulator's payloads, which hold only ASCII and integers.
	jsonSorted jsonStyle = iota
	// jsonCompact is JSON.stringify (and pydantic's model_dump_json): compact, keys in build
	// order.
	jsonCompact
	// jsonSpaced is Python's json.dumps with its defaults: ", " and ": " separators, keys
	// in build order.
	jsonSpaced
)

// text renders v, a payload or a value inside one, in style s. Maps lose the order their
// keys were built in, so "build order" is a fixed order per key name that is not sorted
// (by a hash of the name): one value always renders to one text, which stale-cache reads
// and exact duplicates rely on.
func (s jsonStyle) text(v any) string {
	if s == jsonSorted {
		return jsonText(v)
	}
	var b strings.Builder
	s.write(&b, v)
	return b.String()
}

func (s jsonStyle) write(b *strings.Builder, v any) {
	comma, colon := ",", ":"
	if s == jsonSpaced {
		comma, colon = ", ", ": "
	}
	switch v := v.(type) {
	case payload:
		if v == nil {
			b.WriteString("null") // as encoding/json writes a nil map
			return
		}
		b.WriteByte('{')
		for i, k := range buildOrder(v) {
			if i > 0 {
				b.WriteString(comma)
			}
			writeScalar(b, k)
			b.WriteString(colon)
			s.write(b, v[k])
		}
		b.WriteByte('}')
	case []any:
		if v == nil {
			b.WriteString("null")
			return
		}
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(comma)
			}
			s.write(b, e)
		}
		b.WriteByte(']')
	default:
		writeScalar(b, v)
	}
}

// buildOrder is m's keys in the stand-in for the order code built them in.
func buildOrder(m payload) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(keyRank(a), keyRank(b)), strings.Compare(a, b))
	})
	return keys
}

func keyRank(k string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(k))
	return h.Sum32()
}

// writeScalar writes a string, number, bool or null as JSON, without Go's HTML escaping
// (neither JavaScript nor Python escapes '<', '>' or '&').
func writeScalar(b *strings.Builder, v any) {
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // payloads are built from JSON-safe values only
	}
	b.WriteString(strings.TrimSuffix(out.String(), "\n"))
}
