package toolspan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

// sourceList describes one Sources list of DefaultConfig for the generic source tests.
type sourceList struct {
	name    string
	sources []string
	field   Field // 0 when the field has no presence bit
	// value is what source i carries; want is what the attempt reads from it; read
	// returns absent when the attempt did not read the field.
	value  func(i int) any
	want   func(i int) string
	read   func(a Attempt) string
	absent string
}

func defaultSourceLists() []sourceList {
	s := DefaultConfig().Sources
	text := func(prefix string) (func(int) any, func(int) string) {
		return func(i int) any { return fmt.Sprintf("%s-%d", prefix, i) },
			func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
	}
	number := func(base int) (func(int) any, func(int) string) {
		return func(i int) any { return int64(base + i) },
			func(i int) string { return strconv.Itoa(base + i) }
	}
	payloadOf := func(key string) (func(int) any, func(int) string) {
		return func(i int) any { return map[string]any{key: int64(i)} },
			func(i int) string { return sha(fmt.Sprintf(`{"%s":%d}`, key, i)) }
	}
	tokens := func(f Field, get func(Attempt) int64) func(Attempt) string {
		return func(a Attempt) string {
			if !a.Has(f) {
				return ""
			}
			return strconv.FormatInt(get(a), 10)
		}
	}
	var lists []sourceList
	add := func(name string, sources []string, f Field, pair func() (func(int) any, func(int) string), read func(Attempt) string) {
		v, w := pair()
		lists = append(lists, sourceList{name: name, sources: sources, field: f, value: v, want: w, read: read})
	}
	add("CallID", s.CallID, FieldCallID, func() (func(int) any, func(int) string) { return text("call") }, func(a Attempt) string { return a.CallID })
	add("Attempt", s.Attempt, FieldAttempt, func() (func(int) any, func(int) string) { return number(2) }, func(a Attempt) string {
		if !a.Number.Set {
			return ""
		}
		return strconv.FormatInt(a.Number.Value, 10)
	})
	add("ToolName", s.ToolName, FieldToolName, func() (func(int) any, func(int) string) { return text("tool") }, func(a Attempt) string { return a.ToolName })
	add("Arguments", s.Arguments, FieldArgsHash, func() (func(int) any, func(int) string) { return payloadOf("q") }, func(a Attempt) string { return a.ArgsHash })
	add("Result", s.Result, FieldResultHash, func() (func(int) any, func(int) string) { return payloadOf("r") }, func(a Attempt) string { return a.ResultHash })
	add("ArgsHash", s.ArgsHash, FieldArgsHash, func() (func(int) any, func(int) string) { return text("ah") }, func(a Attempt) string { return a.ArgsHash })
	add("ResultHash", s.ResultHash, FieldResultHash, func() (func(int) any, func(int) string) { return text("rh") }, func(a Attempt) string { return a.ResultHash })
	add("IdempotencyKey", s.IdempotencyKey, FieldIdemHash, func() (func(int) any, func(int) string) {
		return func(i int) any { return fmt.Sprintf("order-%d", i) }, func(i int) string { return sha(fmt.Sprintf("order-%d", i)) }
	}, func(a Attempt) string { return a.IdemHash })
	add("IdemHash", s.IdemHash, FieldIdemHash, func() (func(int) any, func(int) string) { return text("ih") }, func(a Attempt) string { return a.IdemHash })
	add("RunID", s.RunID, FieldRunID, func() (func(int) any, func(int) string) { return text("run") }, func(a Attempt) string { return a.RunID })
	add("TokensIn", s.TokensIn, FieldTokensIn, func() (func(int) any, func(int) string) { return number(100) }, tokens(FieldTokensIn, func(a Attempt) int64 { return a.TokensIn }))
	add("TokensOut", s.TokensOut, FieldTokensOut, func() (func(int) any, func(int) string) { return number(200) }, tokens(FieldTokensOut, func(a Attempt) int64 { return a.TokensOut }))
	add("SideEffect", s.SideEffect, FieldSideEffect, func() (func(int) any, func(int) string) { return text("write") }, func(a Attempt) string { return a.SideEffect })
	statuses := []string{"timeout", "error", "ok"}
	add("Status", s.Status, FieldStatus, func() (func(int) any, func(int) string) {
		return func(i int) any { return statuses[i%3] }, func(i int) string { return statuses[i%3] }
	}, func(a Attempt) string {
		if !a.ExplicitStatus {
			return ""
		}
		return a.Status.String()
	})
	// success=false is the only reading that shows: without it the span is ok, and
	// only the explicit status field sets the status presence bit.
	add("Success", s.Success, 0, func() (func(int) any, func(int) string) {
		return func(int) any { return false }, func(int) string { return "error" }
	}, func(a Attempt) string { return a.Status.String() })
	lists[len(lists)-1].absent = "ok"
	// A tool's own failure report reads as the remap's report, naming its source.
	add("ToolStatus", s.ToolStatus, 0, func() (func(int) any, func(int) string) {
		return func(int) any { return "error" }, func(i int) string { return s.ToolStatus[i] + "=error" }
	}, func(a Attempt) string {
		if a.Remap == nil {
			return ""
		}
		return a.Remap.Report
	})
	add("ReadAsset", s.ReadAsset, 0, func() (func(int) any, func(int) string) { return text("asset") }, func(a Attempt) string { return a.ReadAsset })
	return lists
}

// putSource places v at src, building the element path of a `key#a.b` source. With
// asJSON, maps are sent as JSON strings, otherwise as pcommon maps.
func putSource(t testing.TB, attrs map[string]any, src string, v any, asJSON bool) {
	t.Helper()
	key, path, found := strings.Cut(src, "#")
	if found {
		elems := strings.Split(path, ".")
		for i := len(elems) - 1; i >= 0; i-- {
			v = map[string]any{elems[i]: v}
		}
	}
	if m, ok := v.(map[string]any); ok && asJSON {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		v = string(b)
	}
	attrs[key] = v
}

var encodings = []struct {
	name   string
	asJSON bool
}{{"json string", true}, {"map", false}}

func TestEverySourceIsReadWhenAloneAndIsFieldPresent(t *testing.T) {
	for _, l := range defaultSourceLists() {
		for i, src := range l.sources {
			for _, enc := range encodings {
				t.Run(l.name+"/"+src+"/"+enc.name, func(t *testing.T) {
					attrs := map[string]any{}
					putSource(t, attrs, src, l.value(i), enc.asJSON)
					a := extract(t, "span", attrs)
					assert.Equal(t, l.want(i), l.read(a))
					if l.field != 0 {
						assert.True(t, a.Has(l.field), "presence bit")
					}
				})
			}
		}
	}
}

func TestEarlierSourceWinsWhenBothPresent(t *testing.T) {
	for _, l := range defaultSourceLists() {
		for i := 0; i+1 < len(l.sources); i++ {
			for _, enc := range encodings {
				t.Run(l.name+"/"+l.sources[i]+" over "+l.sources[i+1]+"/"+enc.name, func(t *testing.T) {
					attrs := map[string]any{}
					putSource(t, attrs, l.sources[i+1], l.value(i+1), enc.asJSON)
					putSource(t, attrs, l.sources[i], l.value(i), enc.asJSON)
					assert.Equal(t, l.want(i), l.read(extract(t, "span", attrs)))
				})
			}
		}
		if len(l.sources) > 2 {
			t.Run(l.name+"/all present", func(t *testing.T) {
				attrs := map[string]any{}
				for i := len(l.sources) - 1; i >= 0; i-- {
					putSource(t, attrs, l.sources[i], l.value(i), true)
				}
				assert.Equal(t, l.want(0), l.read(extract(t, "span", attrs)))
			})
		}
	}
}

func TestSourceNearMissesAreNotRead(t *testing.T) {
	for _, l := range defaultSourceLists() {
		for i, src := range l.sources {
			key, path, hasPath := strings.Cut(src, "#")
			t.Run(l.name+"/"+src+"/misspelt key", func(t *testing.T) {
				attrs := map[string]any{}
				putSource(t, attrs, strings.Replace(src, key, key+"_x", 1), l.value(i), true)
				a := extract(t, "span", attrs)
				assert.Equal(t, l.absent, l.read(a))
				if l.field != 0 {
					assert.False(t, a.Has(l.field), "presence bit")
				}
			})
			if !hasPath {
				continue
			}
			// A later source that reads the same key whole (output.value after
			// output.value#output.kwargs.content) reads it when the element is missing.
			whole := slices.Contains(l.sources[i+1:], key)
			t.Run(l.name+"/"+src+"/element absent", func(t *testing.T) {
				attrs := map[string]any{}
				putSource(t, attrs, key+"#"+path+"_x", l.value(i), true)
				want := l.absent
				if whole {
					want = sha(attrs[key].(string))
				}
				assert.Equal(t, want, l.read(extract(t, "span", attrs)))
			})
			t.Run(l.name+"/"+src+"/not a JSON container", func(t *testing.T) {
				want := l.absent
				if whole {
					want = sha(`"plain text"`)
				}
				assert.Equal(t, want, l.read(extract(t, "span", map[string]any{key: "plain text"})))
			})
			if i+1 < len(l.sources) {
				t.Run(l.name+"/"+src+"/element absent falls through to "+l.sources[i+1], func(t *testing.T) {
					attrs := map[string]any{}
					putSource(t, attrs, key+"#"+path+"_x", l.value(i), true)
					putSource(t, attrs, l.sources[i+1], l.value(i+1), true)
					assert.Equal(t, l.want(i+1), l.read(extract(t, "span", attrs)))
				})
			}
		}
	}
}

func TestPathSourcesOnRealPayloads(t *testing.T) {
	oslo := sha(`{"city":"Oslo"}`)
	t.Run("openllmetry entity input arguments", func(t *testing.T) {
		a := extract(t, "get_forecast.tool", map[string]any{
			"traceloop.span.kind":    "tool",
			"traceloop.entity.name":  "get_forecast",
			"traceloop.entity.input": `{"tool_name": "get_forecast", "arguments": {"city": "Oslo"}}`,
		})
		assert.Equal(t, "get_forecast", a.ToolName)
		assert.Equal(t, oslo, a.ArgsHash)
	})
	t.Run("logfire JSON-RPC request and response", func(t *testing.T) {
		a := extract(t, "MCP request: tools/call lookup_order", map[string]any{
			"request":  `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lookup_order","arguments":{"city":"Oslo"}}}`,
			"response": `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"found"}],"isError":false}}`,
		})
		assert.Equal(t, "lookup_order", a.ToolName)
		assert.Equal(t, oslo, a.ArgsHash)
		assert.Equal(t, sha(`{"content":[{"text":"found","type":"text"}],"isError":false}`), a.ResultHash)
		assert.Equal(t, outcome.OK, a.Status)
	})
	t.Run("request name read over the span name", func(t *testing.T) {
		a := extract(t, "MCP request: tools/call from_name", map[string]any{
			"request": `{"params":{"name":"from_request"}}`,
		})
		assert.Equal(t, "from_request", a.ToolName)
	})
	t.Run("request name that is not a string falls back to the span name", func(t *testing.T) {
		a := extract(t, "MCP request: tools/call from_name", map[string]any{
			"request": `{"params":{"name":42}}`,
		})
		assert.Equal(t, "from_name", a.ToolName)
	})
	t.Run("request name with escapes is unescaped", func(t *testing.T) {
		a := extract(t, "span", map[string]any{"request": `{"params":{"name":"caf\u00e9 \"x\""}}`})
		assert.Equal(t, `café "x"`, a.ToolName)
	})
	t.Run("element holding a JSON string hashes alike in both container forms", func(t *testing.T) {
		asJSON := extract(t, "span", map[string]any{"traceloop.entity.input": `{"arguments":"{\"city\":\"Oslo\"}"}`})
		asMap := extract(t, "span", map[string]any{"traceloop.entity.input": map[string]any{"arguments": `{"city":"Oslo"}`}})
		assert.Equal(t, oslo, asMap.ArgsHash)
		assert.Equal(t, asMap.ArgsHash, asJSON.ArgsHash)
	})
	t.Run("request name outside the basic multilingual plane", func(t *testing.T) {
		a := extract(t, "span", map[string]any{"request": `{"params":{"name":"weather_🌤"}}`})
		assert.Equal(t, "weather_🌤", a.ToolName)
	})
}
