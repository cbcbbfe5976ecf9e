package outcome

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// nested wraps inner under key depth times.
func nested(key string, depth int, inner string) string {
	return strings.Repeat(`{"`+key+`":`, depth) + inner + strings.Repeat("}", depth)
}

func TestScanResultOfJSONStrings(t *testing.T) {
	cases := []struct {
		name    string
		payload string
		isError bool
		text    string
	}{
		{"isError true", `{"isError":true}`, true, ""},
		{"isError false", `{"isError":false}`, false, ""},
		{"is_error true (OpenLLMetry)", `{"result":"upstream 503","is_error":true}`, true, "upstream 503"},
		{"is_error false", `{"result":"ok","is_error":false}`, false, ""},
		{"isError string true", `{"isError":"true"}`, true, ""},
		{"isError string TRUE", `{"isError":"TRUE"}`, true, ""},
		{"isError string yes is not a flag", `{"isError":"yes"}`, false, ""},
		{"isError 1 is not a flag", `{"isError":1}`, false, ""},
		{"isError null", `{"isError":null}`, false, ""},
		{"IsError with another case is not the flag", `{"IsError":true}`, false, ""},
		{"either flag true wins", `{"isError":false,"is_error":true}`, true, ""},
		{"MCP tool result", `{"content":[{"type":"text","text":"city not found"}],"isError":true}`, true, "city not found"},
		{"MCP JSON-RPC response, nested under result", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"no such order"}],"isError":true}}`, true, "no such order"},
		{"nested under response", `{"response":{"isError":true,"message":"denied"}}`, true, "denied"},
		{"nested under output", `{"output":{"is_error":true,"error":"quota"}}`, true, "quota"},
		{"nested under an unscanned key", `{"error":{"isError":true},"id":1}`, false, ""},
		{"a lone error (Gemini's and ADK's failure)", `{"error":"card declined"}`, true, "card declined"},
		{"a lone error object", `{"error":{"code":402}}`, true, ""},
		{"a lone null error", `{"error":null}`, false, ""},
		{"a lone empty error", `{"error":" "}`, false, ""},
		{"an error beside a result", `{"error":"none","result":{"id":1}}`, false, ""},
		{"nested in an array is not scanned", `{"result":[{"isError":true}]}`, false, ""},
		{"top-level array", `[{"isError":true}]`, false, ""},
		{"flag at the deepest scanned level", nested("result", maxScanDepth, `{"isError":true}`), true, ""},
		{"flag one level too deep", nested("result", maxScanDepth+1, `{"isError":true}`), false, ""},
		{"invalid JSON holding the word", `{"isError": tru`, false, ""},
		{"invalid UTF-8 around a valid flag", "{\"isError\":true,\"message\":\"bad \xff byte\"}", true, "bad \uFFFD byte"},
		{"trailing data after the document", `{"isError":true} {"x":1}`, false, ""},
		{"no flag words: not parsed", `{"ok":true,"text":"fine"}`, false, ""},
		{"plain text mentioning isError", `the tool said isError`, false, ""},
		{"empty", ``, false, ""},
		{"escaped key is still the isError flag", `{"is\u0045rror":true,"message":"denied"}`, true, "denied"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isErr, text := ScanResult(pcommon.NewValueStr(c.payload))
			assert.Equal(t, c.isError, isErr)
			assert.Equal(t, c.text, text)
		})
	}
}

func TestScanResultOfMaps(t *testing.T) {
	cases := []struct {
		name    string
		raw     map[string]any
		isError bool
		text    string
	}{
		{"isError true", map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "boom"}}}, true, "boom"},
		{"isError false", map[string]any{"isError": false}, false, ""},
		{"is_error string true", map[string]any{"is_error": "True", "result": "no"}, true, "no"},
		{"nested under result", map[string]any{"jsonrpc": "2.0", "result": map[string]any{"isError": true, "error": "e"}}, true, "e"},
		{"no flag", map[string]any{"content": []any{}}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := pcommon.NewValueMap()
			require.NoError(t, v.Map().FromRaw(c.raw))
			isErr, text := ScanResult(v)
			assert.Equal(t, c.isError, isErr)
			assert.Equal(t, c.text, text)
		})
	}
}

func TestScanResultOfOtherTypes(t *testing.T) {
	bytesVal := pcommon.NewValueBytes()
	bytesVal.Bytes().FromRaw([]byte(`{"isError":true}`))
	sliceVal := pcommon.NewValueSlice()
	require.NoError(t, sliceVal.Slice().FromRaw([]any{map[string]any{"isError": true}}))
	for name, v := range map[string]pcommon.Value{
		"empty": pcommon.NewValueEmpty(),
		"bool":  pcommon.NewValueBool(true),
		"int":   pcommon.NewValueInt(1),
		"bytes": bytesVal,
		"slice": sliceVal,
	} {
		t.Run(name, func(t *testing.T) {
			isErr, text := ScanResult(v)
			assert.False(t, isErr)
			assert.Empty(t, text)
		})
	}
}

func TestScanResultText(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		text string
	}{
		{"first text content", `{"isError":true,"content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}`, "one"},
		{"skips non-text content", `{"isError":true,"content":[{"type":"image","data":"AA=="},{"type":"text","text":"after image"}]}`, "after image"},
		{"skips empty text", `{"isError":true,"content":[{"type":"text","text":""},{"type":"text","text":"second"}]}`, "second"},
		{"skips non-object content items", `{"isError":true,"content":["raw",{"text":"obj"}]}`, "obj"},
		{"content text wins over result", `{"isError":true,"content":[{"text":"from content"}],"result":"from result"}`, "from content"},
		{"result string", `{"isError":true,"result":"from result","error":"from error"}`, "from result"},
		{"error string", `{"isError":true,"error":"from error","message":"from message"}`, "from error"},
		{"message string", `{"isError":true,"message":"from message"}`, "from message"},
		{"result object is not text", `{"isError":true,"result":{"code":1},"message":"m"}`, "m"},
		{"empty result string falls through", `{"isError":true,"result":"","error":"e"}`, "e"},
		{"content that is not a list", `{"isError":true,"content":"text","message":"m"}`, "m"},
		{"no text anywhere", `{"isError":true,"content":[]}`, ""},
		{"text of the level holding the flag", `{"message":"outer","result":{"isError":true,"message":"inner"}}`, "inner"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isErr, text := ScanResult(pcommon.NewValueStr(c.doc))
			assert.True(t, isErr)
			assert.Equal(t, c.text, text)
		})
	}
}

func TestScanResultTextTruncationKeepsValidUTF8(t *testing.T) {
	cases := []struct {
		name     string
		text     string
		wantBody string // the kept prefix, before the ellipsis
		cut      bool
	}{
		{"exactly the limit", strings.Repeat("a", maxTextLen), strings.Repeat("a", maxTextLen), false},
		{"one byte over", strings.Repeat("a", maxTextLen+1), strings.Repeat("a", maxTextLen), true},
		{"two-byte rune across the limit", strings.Repeat("a", maxTextLen-1) + strings.Repeat("é", 10), strings.Repeat("a", maxTextLen-1), true},
		{"two-byte runes ending on the limit", strings.Repeat("é", 200), strings.Repeat("é", maxTextLen/2), true},
		{"four-byte rune across the limit", "a" + strings.Repeat("😀", 100), "a" + strings.Repeat("😀", 63), true},
		{"three-byte runes", strings.Repeat("€", 100), strings.Repeat("€", 85), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := json.Marshal(map[string]any{"isError": true, "message": c.text})
			require.NoError(t, err)
			isErr, text := ScanResult(pcommon.NewValueStr(string(doc)))
			require.True(t, isErr)
			assert.True(t, utf8.ValidString(text), "valid UTF-8: %q", text)
			if c.cut {
				assert.Equal(t, c.wantBody+"…", text)
			} else {
				assert.Equal(t, c.wantBody, text)
			}
			assert.LessOrEqual(t, len(strings.TrimSuffix(text, "…")), maxTextLen)
		})
	}
}

func FuzzScanResult(f *testing.F) {
	for _, s := range []string{
		`{"isError":true}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`,
		`{"result":"upstream 503","is_error":"true"}`,
		`{"isError": tru`,
		nested("result", maxScanDepth+1, `{"isError":true}`),
		`{"isError":true,"message":"` + strings.Repeat("é", 200) + `"}`,
		"{\"is_error\":true,\"error\":\"\xff\xfe\"}",
		`[{"isError":true}]`,
		`{"isError" :	false, "result": {"isError": true}}`,
		`{"isError": false}`,
		``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		isErr, text := ScanResult(pcommon.NewValueStr(s))
		if isErr && FlagFree(pcommon.NewValueStr(s)) {
			t.Fatalf("FlagFree cleared a flagged result %q", s)
		}
		if !isErr && text != "" {
			t.Fatalf("text %q without an error flag for %q", text, s)
		}
		if !utf8.ValidString(text) {
			t.Fatalf("invalid UTF-8 text %q for %q", text, s)
		}
		if len(strings.TrimSuffix(text, "…")) > maxTextLen {
			t.Fatalf("text of %d bytes for %q", len(text), s)
		}
		// The same payload sent as a map must read the same.
		var doc map[string]any
		if json.Unmarshal([]byte(s), &doc) != nil {
			return
		}
		v := pcommon.NewValueMap()
		if v.Map().FromRaw(doc) != nil {
			return
		}
		mapErr, mapText := ScanResult(v)
		if mapErr && FlagFree(v) {
			t.Fatalf("FlagFree cleared a flagged map %q", s)
		}
		if mapErr != isErr || mapText != text {
			t.Fatalf("map form reads (%v, %q), JSON string form (%v, %q), for %q", mapErr, mapText, isErr, text, s)
		}
	})
}
