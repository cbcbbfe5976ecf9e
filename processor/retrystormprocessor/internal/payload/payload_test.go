package payload

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestCanonicalJSONMatchesPythonDumps(t *testing.T) {
	// Expected strings are what python3's json.dumps(v, sort_keys=True,
	// separators=(",", ":")) prints for the same documents.
	cases := map[string]string{
		`{"b":1, "a":"é", "c":[1.5, true, null]}`: `{"a":"\u00e9","b":1,"c":[1.5,true,null]}`,
		` { "city" : "Oslo" } `:                   `{"city":"Oslo"}`,
		`{"z":{"y":2,"x":[{"b":1,"a":0}]}}`:       `{"z":{"x":[{"a":0,"b":1}],"y":2}}`,
		`"tab\there \u007f 😀"`:                    `"tab\there ` + "\x7f" + ` \ud83d\ude00"`,
		`[1e3, -0.25]`:                            `[1e3,-0.25]`,
	}
	for in, want := range cases {
		got, err := CanonicalJSON([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, string(got), in)
	}
}

func TestCanonicalJSONRejectsBadInput(t *testing.T) {
	for _, in := range []string{`{"a":`, `{"a":1} {"b":2}`, ``, strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		_, err := CanonicalJSON([]byte(in))
		assert.Error(t, err, in)
	}
}

func TestHashOfSeedStyleArgumentsMatchesPython(t *testing.T) {
	// python3: hashlib.sha256(json.dumps({"city":"Oslo"}, sort_keys=True,
	// separators=(",",":")).encode()).hexdigest()
	const want = "99a8fa9e4312f0bfd68a60a3ca5a7fd7fad321910c43c41afc6702c0697920a4"
	h := NewHasher(nil)
	assert.Equal(t, want, h.TextDigest(`{ "city": "Oslo" }`))

	m := pcommon.NewValueMap()
	m.Map().PutStr("city", "Oslo")
	got, _ := h.PayloadDigest(m, nil)
	assert.Equal(t, want, got, "a map and the same JSON string hash alike")
}

func TestCanonicalValueTypes(t *testing.T) {
	v := pcommon.NewValueMap()
	m := v.Map()
	m.PutInt("n", 3)
	m.PutDouble("f", 2)
	m.PutDouble("g", 0.5)
	m.PutBool("ok", false)
	s := m.PutEmptySlice("list")
	s.AppendEmpty().SetStr("x")
	s.AppendEmpty().SetEmptyMap().PutStr("k", "v")
	assert.Equal(t, `{"f":2.0,"g":0.5,"list":["x",{"k":"v"}],"n":3,"ok":false}`, string(CanonicalValue(v)))

	assert.Equal(t, `"not json {"`, string(CanonicalValue(pcommon.NewValueStr("not json {"))))
	assert.Equal(t, `"{broken"`, string(CanonicalValue(pcommon.NewValueStr("{broken"))), "invalid JSON hashes as its raw string")
	assert.Equal(t, `"\ufffd"`, string(CanonicalValue(pcommon.NewValueStr("\xff"))), "invalid UTF-8 is replaced, not dropped")
}

func TestKeyedHashIsHMAC(t *testing.T) {
	key := []byte("k3y")
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(`{"acct":"12345678"}`))
	want := hex.EncodeToString(mac.Sum(nil))

	keyed := NewHasher(key)
	got := keyed.TextDigest(`{"acct": "12345678"}`)
	assert.Equal(t, want, got)
	assert.NotEqual(t, NewHasher(nil).TextDigest(`{"acct":"12345678"}`), got)
	assert.Equal(t, got, keyed.TextDigest(`{"acct":"12345678"}`), "the hasher resets between sums")
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"x"`, `[`, `{"isError":true}`, "\xff\xfe", `1e999`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := CanonicalJSON([]byte(s))
		if err != nil {
			return
		}
		again, err := CanonicalJSON(out)
		if err != nil {
			t.Fatalf("canonical output does not parse: %q -> %q: %v", s, out, err)
		}
		if string(again) != string(out) {
			t.Fatalf("canonical form is not stable: %q -> %q -> %q", s, out, again)
		}
	})
}

func TestCanonicalValuePath(t *testing.T) {
	req := pcommon.NewValueStr(`{"method":"tools/call","params":{"name":"lookup","arguments":{"b":2,"a":1}},"id":4}`)
	got, ok := CanonicalValuePath(req, []string{"params", "arguments"})
	require.True(t, ok)
	assert.Equal(t, `{"a":1,"b":2}`, string(got))

	_, ok = CanonicalValuePath(req, []string{"params", "missing"})
	assert.False(t, ok)
	_, ok = CanonicalValuePath(pcommon.NewValueStr("plain"), []string{"a"})
	assert.False(t, ok)

	m := pcommon.NewValueMap()
	m.Map().PutEmptyMap("arguments").PutStr("city", "Oslo")
	got, ok = CanonicalValuePath(m, []string{"arguments"})
	require.True(t, ok)
	assert.Equal(t, `{"city":"Oslo"}`, string(got))
}

// TestAJSONStringHoldingADocumentHashesAsTheDocument: OpenLLMetry records a string a tool
// returned as JSON (JSON.stringify), while a message copies the string: an attribute that is
// a JSON string holding a JSON document hashes as the document. Any other JSON string, and
// text that merely starts and ends with a quote, hashes as the text it is.
func TestAJSONStringHoldingADocumentHashesAsTheDocument(t *testing.T) {
	h := NewHasher(nil)
	for _, c := range []struct{ encoded, copied string }{
		{`"{\"charge_id\":\"ch_1\",\"amount\":7204}"`, `{"amount":7204,"charge_id":"ch_1"}`},
		{` "[1, 2]" `, `[1,2]`},
	} {
		if got, want := h.TextDigest(c.encoded), h.TextDigest(c.copied); got != want {
			t.Errorf("TextDigest(%s) = %s, want the hash of %s, %s", c.encoded, got, c.copied, want)
		}
	}
	for _, text := range []string{`"Done: the order is paid."`, `"yes" and "no"`, `"unterminated \"`, `"\"{}\""`} {
		if got, want := h.TextDigest(text), h.sum(appendString(nil, text)); got != want {
			t.Errorf("TextDigest(%s) = %s, want the hash of the text as a JSON string, %s", text, got, want)
		}
	}
}
