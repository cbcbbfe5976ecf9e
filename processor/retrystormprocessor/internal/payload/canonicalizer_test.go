package payload

import (
	"errors"
	"testing"
)

func FuzzCanonicalMatchesDecoder(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,false,null,-0.5e+3]}`, `{"a":1,"a":2}`, `"\u00e9\ud83d\ude00\ud800x"`,
		`{"\u0062":1,"a":{"z":"\"\\\/\b\f\n\r\t"}}`, "{\"k\xff\":1,\"k\":2}", `[1,]`, `01`, `{"a" 1}`, ` [ ] `, `1e999`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, errFast := canonicalAppend(nil, []byte(s))
		slow, errSlow := canonicalViaDecoder([]byte(s))
		if errors.Is(errFast, errTooDeep) || errors.Is(errSlow, errTooDeep) {
			return
		}
		if (errFast == nil) != (errSlow == nil) {
			t.Fatalf("%q: fast err %v, decoder err %v", s, errFast, errSlow)
		}
		if errFast == nil && string(fast) != string(slow) {
			t.Fatalf("%q:\nfast    %s\ndecoder %s", s, fast, slow)
		}
	})
}
