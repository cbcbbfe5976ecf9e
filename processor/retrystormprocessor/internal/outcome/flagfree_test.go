package outcome

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestFlagFree(t *testing.T) {
	free := []string{``, `plain text`, `{"content":[{"type":"text","text":"ok"}],"isError": false}`,
		`{"isError" :	false,"is_error":false}`}
	maybe := []string{`{"isError":true}`, `{"isError":"true"}`, `{"result":{"is_error": true}}`,
		`{"is\u0045rror":true}`, `"isError" then text`, `{"error":"timed out"}`}
	for _, s := range free {
		assert.True(t, FlagFree(pcommon.NewValueStr(s)), s)
	}
	for _, s := range maybe {
		assert.False(t, FlagFree(pcommon.NewValueStr(s)), s)
	}
	m := pcommon.NewValueMap()
	m.Map().PutEmptyMap("result").PutBool("isError", true)
	assert.False(t, FlagFree(m), "a nested flag in a map")
	m.Map().PutEmptyMap("result").PutBool("isError", false)
	assert.True(t, FlagFree(m))
	assert.True(t, FlagFree(pcommon.NewValueInt(3)))
}

// flagFreeBySearch is the specification stringFlagFree implements in one pass: no `\u`,
// no "error" member (a lone error fails an attempt), and every "isError" / "is_error" key
// followed by false, found by substring search.
func flagFreeBySearch(s string) bool {
	if strings.Contains(s, `\u`) || strings.Contains(s, `"error"`) {
		return false
	}
	for _, key := range []string{`"isError"`, `"is_error"`} {
		for rest := s; ; {
			i := strings.Index(rest, key)
			if i < 0 {
				break
			}
			rest = rest[i+len(key):]
			after := strings.TrimLeft(rest, " \t\r\n")
			if !strings.HasPrefix(after, ":") || !strings.HasPrefix(strings.TrimLeft(after[1:], " \t\r\n"), "false") {
				return false
			}
		}
	}
	return true
}

func FuzzStringFlagFreeMatchesSearch(f *testing.F) {
	for _, s := range []string{``, `"is`, `"isError"`, `"isError": false`, `"is_error" :false"isError":true`,
		`{"a":"\\u0041","isError":false}`, `x\u0045`, `\\`, `"isError"isError":false`, `"is_error"`,
		mcpResponse, plainResult, `{"isError"  :  false, "x":"\"is_error\":true"}`,
		`Error"isError"`, // a key's closing quote opening the flag
		`"error"`, `{"error":"timeout"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := stringFlagFree(s), flagFreeBySearch(s); got != want {
			t.Fatalf("stringFlagFree(%q) = %v, by search %v", s, got, want)
		}
	})
}

// mcpResponse is an MCP tool result as agents send it: JSON text inside JSON, full of
// escaped quotes and snake_case keys.
const mcpResponse = `{"id":8,"jsonrpc":"2.0","result":{"isError":false,"content":[{"type":"text","text":"{\"hits\":[{\"snippet\":\"account budget customer refund freshness settlement delay contract schema order retry\",\"doc_id\":\"kb_1182\",\"score_bp\":8123},{\"snippet\":\"renewal order settlement budget replica policy\",\"doc_id\":\"kb_0412\",\"score_bp\":7710}],\"total_hits\":2}"}]}}`

// plainResult is a result without JSON inside it: no backslash.
const plainResult = `{"content":[{"type":"text","text":"account budget customer refund freshness settlement delay contract schema order retry renewal order settlement budget replica policy"}],"structured":{"doc_id":"kb_1182","score_bp":8123,"total_hits":2},"isError":false}`

// BenchmarkStringFlagFree compares the scan with its substring-search definition on an MCP
// result (JSON inside JSON) and on a plain one.
func BenchmarkStringFlagFree(b *testing.B) {
	for _, doc := range []struct{ name, s string }{{"mcp", mcpResponse}, {"plain", plainResult}} {
		for _, f := range []struct {
			name string
			free func(string) bool
		}{{"scan", stringFlagFree}, {"search", flagFreeBySearch}} {
			b.Run(doc.name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(doc.s)))
				for b.Loop() {
					if !f.free(doc.s) {
						b.Fatal("flagged")
					}
				}
			})
		}
	}
}
