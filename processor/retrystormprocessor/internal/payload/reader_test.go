package payload

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// FuzzPathSourceReadings holds every reading of one path source (key#a.b) to one another
// and to encoding/json, in a JSON string attribute and in a map attribute holding the same
// document (repeated keys kept): the digest (hash), the fingerprints and the string and
// emptiness triage reads, the text copies carry (HashedTexts) and what redaction hunts
// (Elements). The element the hash reads is the one encoding/json decodes (a repeated
// member's last value), and it is the last of the elements redaction hunts; redaction
// hunts every member a repeated key names, as a token-by-token reading finds them.
func FuzzPathSourceReadings(f *testing.F) {
	f.Add(`{"params":{"name":"x","arguments":{"b":1,"a":2}}}`, "params.arguments")
	f.Add(`{"arguments":{"card":"4111"},"kwargs":{},"arguments":{"card":"5500"}}`, "arguments")
	f.Add(`{"params":{"arguments":{"a":1}},"params":{"name":"x"},"params":{"arguments":[2]}}`, "params.arguments")
	f.Add(`{"a":{"b":"first"},"a":{"c":2}}`, "a.b")
	f.Add(`{"a":[{"b":1},{"b":2}]}`, "a.b")
	f.Add(`{"a":[{"b":1},{"b":2}]}`, "a.0")
	f.Add(`{"0":"member","a":["element"]}`, "0")
	f.Add(`{"\u0041rgs":{"\u0063ard":"4111"},"Args":{"card":"5500"}}`, "Args.card")
	f.Add(`{"k\u00e9y":"v1","k\u00E9y":"v2"}`, "k\u00e9y")
	f.Add(`{"a\\b":1,"a\"b":2}`, `a"b`)
	f.Add("{\"a\xff\":1}", "a\ufffd")
	f.Add(`{"result":"{\"content\":\"x\",\"content\":\"y\"}"}`, "result")
	f.Add(`{"output":{"kwargs":{"content":"\"{\\\"a\\\":1}\"","status":"success"}}}`, "output.kwargs.content")
	f.Add(`{"args":["{\"q\":1}"],"kwargs":{}}`, "args")
	f.Add(`{"kwargs":{},"args":[]}`, "kwargs")
	f.Add(`{"a":{"b":{"c":{"d":"deep"}}},"a":{"b":{"c":{"d":"deeper"}}}}`, "a.b.c.d")
	f.Add(`{"n":1.50,"n":-0,"t":true,"z":null}`, "n")
	f.Add(`{"a":1,"b":`, "a")
	f.Add(`{"a":"x","a":`, "a")
	f.Fuzz(func(t *testing.T, doc, dotted string) {
		path := strings.Split(dotted, ".")
		v := pcommon.NewValueStr(doc)
		readingsAgree(t, v, path, doc)
		if !json.Valid([]byte(doc)) || elementDepth(doc, path) >= maxDepth-1 {
			return
		}
		want, wantOK := valuePathViaDecoder(doc, path)
		got, ok := CanonicalValuePath(v, path)
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("path %q of %q: the hash reads %q %v, encoding/json %q %v", dotted, doc, got, ok, want, wantOK)
		}
		all, ok := elementsViaTokens(doc, path)
		if !ok {
			return
		}
		if hunted := validUTF8(huntedForms(Elements(v, path))); !slices.Equal(hunted, huntedOf(all)) {
			t.Fatalf("path %q of %q: redaction hunts %q, every member holds %q", dotted, doc, hunted, huntedOf(all))
		}
		m, ok := mapAttribute(doc)
		if !ok {
			return
		}
		readingsAgree(t, m, path, doc)
		wantMap, wantMapOK := mapPathViaDecoder(doc, path)
		gotMap, ok := CanonicalValuePath(m, path)
		if ok != wantMapOK || !bytes.Equal(gotMap, wantMap) {
			t.Fatalf("path %q of map %q: the hash reads %q %v, encoding/json %q %v", dotted, doc, gotMap, ok, wantMap, wantMapOK)
		}
		if hunted := huntedForms(Elements(m, path)); len(hunted) != len(all) {
			t.Fatalf("path %q of map %q: redaction hunts %q, every member holds %q", dotted, doc, hunted, all)
		}
	})
}

// readingsAgree checks the readings of path inside v against one another: each finds the
// element where the digest does, the fingerprints follow the digest, a copied text carries
// it, and the element hashed is the last redaction hunts.
func readingsAgree(t *testing.T, v pcommon.Value, path []string, doc string) {
	t.Helper()
	x := NewHasher(nil)
	digest, ok := x.PayloadDigest(v, path)
	canonical, canonicalOK := CanonicalValuePath(v, path)
	if ok != canonicalOK || ok && digest != x.sum(canonical) {
		t.Fatalf("path %q of %v %q: digest %s %v, of the canonical form %q %v", path, v.Type(), doc, digest, ok, canonical, canonicalOK)
	}
	if _, fok := x.DigestFingerprint(v, path); fok != ok {
		t.Fatalf("path %q of %v %q: digest fingerprint found %v, digest %v", path, v.Type(), doc, fok, ok)
	}
	if _, fok := x.ResultFingerprint(v, path); fok != ok {
		t.Fatalf("path %q of %v %q: result fingerprint found %v, digest %v", path, v.Type(), doc, fok, ok)
	}
	if x.EmptyField(v, path) && !ok {
		t.Fatalf("path %q of %v %q: an empty field where the digest finds none", path, v.Type(), doc)
	}
	s, sok := x.StringField(v, path)
	if sok && !ok {
		t.Fatalf("path %q of %v %q: string field %q where the digest finds none", path, v.Type(), doc, s)
	}
	text, listed, present := x.CopiedText(v, path)
	if present != ok {
		t.Fatalf("path %q of %v %q: copied text present %v, digest %v", path, v.Type(), doc, present, ok)
	}
	if present && !listed && text != "" && x.TextDigest(text) != digest {
		t.Fatalf("path %q of %v %q: a copy of %q carries %s, the element's digest is %s", path, v.Type(), doc, text, x.TextDigest(text), digest)
	}
	hunted := huntedForms(Elements(v, path))
	// A string holding bytes that are not UTF-8 is hashed as its canonical JSON has them
	// (each as U+FFFD, as encoding/json decodes them) and hunted as the bytes are, which is
	// what its copies in other spans carry.
	if ok && (len(hunted) == 0 || decodedUTF8(hunted[len(hunted)-1]) != huntedForm(canonical)) {
		t.Fatalf("path %q of %v %q: hashed %q, redaction hunts %q", path, v.Type(), doc, canonical, hunted)
	}
}

// validUTF8 is each hunted text as encoding/json decodes it: bytes that are not UTF-8 are
// hunted as they are (what copies carry), and read as U+FFFD by a decoder.
func validUTF8(texts []string) []string {
	out := make([]string, len(texts))
	for i, s := range texts {
		out[i] = decodedUTF8(s)
	}
	return out
}

// decodedUTF8 is s with each byte that is not UTF-8 read as U+FFFD, as encoding/json and
// the canonical form read it.
func decodedUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// huntedForm is what redaction hunts of an element whose canonical JSON is canonical: a
// string's text, any other element's JSON (a number, a literal, a container).
func huntedForm(canonical []byte) string {
	if len(canonical) > 0 && canonical[0] == '"' {
		if s, ok := unquote(canonical); ok {
			return s
		}
	}
	return string(canonical)
}

// huntedForms is the huntedForm of each element redaction reads: a string yielded is the
// text it hunts (a string element decoded, or another element's JSON text, a container
// hunted by its canonical leaves); any other value, its canonical JSON.
func huntedForms(elements func(func(pcommon.Value) bool)) []string {
	var out []string
	for el := range elements {
		if el.Type() != pcommon.ValueTypeStr {
			out = append(out, huntedForm(CanonicalValue(el)))
			continue
		}
		s := el.Str()
		if LooksLikeJSONContainer(s) {
			if c, err := canonicalAppend(nil, []byte(s)); err == nil {
				s = string(c)
			}
		}
		out = append(out, s)
	}
	return out
}

func huntedOf(canonical []string) []string {
	out := make([]string, len(canonical))
	for i, c := range canonical {
		out[i] = huntedForm([]byte(c))
		if LooksLikeJSONContainer(out[i]) {
			if inner, err := canonicalAppend(nil, []byte(out[i])); err == nil {
				out[i] = string(inner)
			}
		}
	}
	return out
}

// mapAttribute is doc, a JSON object, as a map attribute keeping every member of its
// objects, repeated keys included: pdata's Put cannot write a key twice, OTLP's decoder
// keeps both. Numbers are written as strings, as mapPathViaDecoder reads them.
func mapAttribute(doc string) (pcommon.Value, bool) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	root, _, err := decodeMulti(dec)
	if err != nil || root.kind != '{' {
		return pcommon.Value{}, false
	}
	var b strings.Builder
	b.WriteString(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"s","attributes":[{"key":"k","value":`)
	writeOTLP(&b, root)
	b.WriteString(`}]}]}]}]}`)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(b.String()))
	if err != nil {
		return pcommon.Value{}, false
	}
	v, ok := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Get("k")
	return v, ok && v.Type() == pcommon.ValueTypeMap
}

func writeOTLP(b *strings.Builder, n multiNode) {
	switch n.kind {
	case '{':
		b.WriteString(`{"kvlistValue":{"values":[`)
		for i, m := range n.members {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"key":` + jsonString(m.key) + `,"value":`)
			writeOTLP(b, m.val)
			b.WriteByte('}')
		}
		b.WriteString(`]}}`)
	case '[':
		b.WriteString(`{"arrayValue":{"values":[`)
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			writeOTLP(b, it)
		}
		b.WriteString(`]}}`)
	default:
		switch s := n.scalar.(type) {
		case string:
			b.WriteString(`{"stringValue":` + jsonString(s) + `}`)
		case json.Number:
			b.WriteString(`{"stringValue":` + jsonString(s.String()) + `}`)
		case bool:
			b.WriteString(`{"boolValue":` + strconv.FormatBool(s) + `}`)
		default:
			b.WriteString(`{}`)
		}
	}
}

// mapPathViaDecoder is the reference reading of path in the map attribute mapAttribute
// makes of doc: encoding/json's decoding (a repeated key's last value), walked along path,
// numbers as strings, as the map attribute's canonical JSON.
func mapPathViaDecoder(doc string, path []string) ([]byte, bool) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var cur any
	if dec.Decode(&cur) != nil {
		return nil, false
	}
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	v := pcommon.NewValueEmpty()
	if v.FromRaw(numbersAsStrings(cur)) != nil {
		return nil, false
	}
	return CanonicalValue(v), true
}

// jsonString is s as a JSON string (encoding/json writes invalid UTF-8 as U+FFFD, as it
// decoded the document).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func numbersAsStrings(v any) any {
	switch t := v.(type) {
	case json.Number:
		return t.String()
	case []any:
		for i, e := range t {
			t[i] = numbersAsStrings(e)
		}
	case map[string]any:
		for k, e := range t {
			t[k] = numbersAsStrings(e)
		}
	}
	return v
}
