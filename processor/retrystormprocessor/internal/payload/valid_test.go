package payload

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestValidJSONAgreesWithTheCanonicalizer(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, ` { "a" : [ 1 , -2.5e+3 , true , false , null , "x\u00e9\n" ] } `,
		`{"a":1,}`, `[1,]`, `{,}`, `[`, `{"a"}`, `{"a":}`, `"\x"`, "\"a\x01\"", `01`, `1.`, `-`,
		`1e`, `tru`, `nulls`, `{"a":1}x`, `[1 2]`, `{"a":1 "b":2}`, `"\u12"`, "\"\xff\"", `{"a":{"b":[]}}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64), strings.Repeat("[", 65) + strings.Repeat("]", 65),
		strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64), `{"a":[}`, `[{]`,
	} {
		_, err := canonicalAppend(nil, []byte(doc))
		if got, want := validJSON([]byte(doc)), err == nil; got != want {
			t.Errorf("validJSON(%q) = %v, canonicalizer accepts: %v", doc, got, want)
		}
	}
}

// FuzzValidJSONAgreesWithTheCanonicalizer: validJSON accepts exactly what the canonicalizer
// does, so a fingerprint taken without canonicalising falls through to the same source.
func FuzzValidJSONAgreesWithTheCanonicalizer(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"\u00e9"}]}`, `[1,]`, `{"a" : -0.5E-7 }`, `"\ud800"`, strings.Repeat("[", 65)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		_, err := canonicalAppend(nil, doc)
		if got, want := validJSON(doc), err == nil; got != want {
			t.Fatalf("validJSON(%q) = %v, canonicalizer accepts: %v", doc, got, want)
		}
	})
}

// FuzzPrintAgreesWithDigest: ValuePathPrint without the digest (what triage remembers)
// accepts and fingerprints exactly what it does with the digest (what the analysis
// remembers), on any document, valid or not.
func FuzzPrintAgreesWithDigest(f *testing.F) {
	f.Add(`{"result":{"content":[{"text":"x"}],"isError":false}}`, "result")
	f.Add(`{"result":{"a":[1,]},"x":1}`, "result")
	f.Add(`{"result":"{\"b\":1}"}`, "result")
	f.Add(`{"a":1}`, "")
	f.Fuzz(func(t *testing.T, doc, dotted string) {
		var path []string
		if dotted != "" {
			path = strings.Split(dotted, ".")
		}
		v := pcommon.NewValueStr(doc)
		x := NewHasher(nil)
		_, p, ok := x.ValuePathPrint(v, path, false)
		h, wantP, wantOK := x.ValuePathPrint(v, path, true)
		if ok != wantOK || p != wantP {
			t.Fatalf("path %q of %q: print-only %x %v, with digest %x %v", dotted, doc, p, ok, wantP, wantOK)
		}
		if ok && h == "" {
			t.Fatalf("path %q of %q: accepted without a digest", dotted, doc)
		}
	})
}
