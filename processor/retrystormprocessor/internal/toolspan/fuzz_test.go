package toolspan

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// typed puts s at key as the value it spells: a JSON document as a map, slice or scalar,
// an integer as an int, a number as a double, anything else as the string.
func typed(m pcommon.Map, key, s string) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		m.PutInt(key, n)
		return
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		m.PutDouble(key, f)
		return
	}
	var doc any
	if json.Unmarshal([]byte(s), &doc) == nil {
		if m.PutEmpty(key).FromRaw(doc) == nil {
			return
		}
	}
	m.PutStr(key, s)
}

func fuzzSpans(args, result, attempt, request string) []ptrace.Span {
	asStrings := ptrace.NewSpan()
	asStrings.SetName("MCP request: tools/call " + attempt)
	asStrings.SetStartTimestamp(startNanos)
	asStrings.SetEndTimestamp(endNanos)
	m := asStrings.Attributes()
	m.PutStr("gen_ai.operation.name", "execute_tool")
	m.PutStr("gen_ai.tool.call.arguments", args)
	m.PutStr("gen_ai.tool.call.result", result)
	m.PutStr("attempt", attempt)
	m.PutStr("gen_ai.usage.input_tokens", attempt)
	m.PutStr("idempotency_key", attempt)
	m.PutStr("side_effect", attempt)
	m.PutStr("error.type", attempt)
	m.PutStr("request", request)
	m.PutStr("response", result)
	m.PutStr("traceloop.entity.input", args)

	asValues := ptrace.NewSpan()
	asValues.SetName(attempt + ".tool")
	asValues.SetStartTimestamp(startNanos)
	asValues.SetEndTimestamp(endNanos)
	asValues.Status().SetCode(ptrace.StatusCodeOk)
	asValues.Status().SetMessage(result)
	m = asValues.Attributes()
	m.PutStr("mcp.method.name", "tools/call")
	typed(m, "ai.toolCall.args", args)
	typed(m, "output.value", result)
	typed(m, "retry.attempt", attempt)
	typed(m, "tokens_out", attempt)
	typed(m, "status", attempt)
	typed(m, "success", attempt)
	typed(m, "request", request)
	typed(m, "traceloop.entity.input", request)
	typed(m, "tool.name", request)
	return []ptrace.Span{asStrings, asValues}
}

func FuzzExtract(f *testing.F) {
	f.Add(`{"city":"Oslo"}`, `{"content":[{"type":"text","text":"boom"}],"isError":true}`, "2",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{"a":1}}}`)
	f.Add(`{"tool_name":"x","arguments":{"b":[1,2]}}`, `{"result":{"isError":"true"}}`, "-1", `{"params":{"name":"😀"}}`)
	f.Add(`[`, "{\"isError\": tru\xff", "9223372036854775807", `{"params":[]}`)
	f.Add("\xff", `{"is_error":true,"result":"`+strings.Repeat("é", 200)+`"}`, "1e300", `plain`)
	f.Add(strings.Repeat("[", 100)+strings.Repeat("]", 100), ``, "NaN", `{"params":{"name":42,"arguments":null}}`)
	f.Add(`"just a string"`, `{"isError":false}`, "timeout", `{"params":{"name":"a\u0000b"}}`)
	f.Fuzz(func(t *testing.T, args, result, attempt, request string) {
		x := NewExtractor(DefaultConfig(), nil, true)
		for i, span := range fuzzSpans(args, result, attempt, request) {
			if !x.IsToolSpan(span) {
				t.Fatalf("span %d is not recognised", i)
			}
			a := x.Extract(span, pcommon.NewResource())
			n := a.Number
			switch {
			case !n.Set && (n.Invalid || n.Value != 0):
				t.Fatalf("unset attempt number %+v", n)
			case n.Invalid && n.Value != 0:
				t.Fatalf("invalid attempt number with a value %+v", n)
			case n.Set && !n.Invalid && n.Value < 1:
				t.Fatalf("valid attempt number below 1 %+v", n)
			}
			if a.TokensIn < 0 || a.TokensOut < 0 {
				t.Fatalf("negative tokens %d %d", a.TokensIn, a.TokensOut)
			}
			if len(a.ArgsHash) != 64 || len(a.ResultHash) != 64 {
				t.Fatalf("hashes %q %q", a.ArgsHash, a.ResultHash)
			}
			if a.Status > outcome.Unknown {
				t.Fatalf("status %d out of range", a.Status)
			}
			if a.Remap != nil {
				if i == 0 && !a.Status.Failed() {
					t.Fatalf("span change planned for a %s attempt", a.Status)
				}
				d := strings.TrimSuffix(a.Remap.Description, "…")
				if len(d) > 256 || !utf8.ValidString(a.Remap.Description) {
					t.Fatalf("description %q", a.Remap.Description)
				}
			}
			again := x.Extract(span, pcommon.NewResource())
			if again.ArgsHash != a.ArgsHash || again.ResultHash != a.ResultHash || again.IdemHash != a.IdemHash {
				t.Fatal("hashes differ between two reads of one span")
			}
		}
		send := ptrace.NewSpan()
		send.SetKind(ptrace.SpanKindClient)
		send.SetEndTimestamp(endNanos)
		typed(send.Attributes(), "http.request.method", request)
		typed(send.Attributes(), "http.request.resend_count", attempt)
		typed(send.Attributes(), "http.response.status_code", attempt)
		if !IsTransport(send) {
			t.Fatal("HTTP client span is not a send")
		}
		if s := ReadSend(send); s.Number < 0 {
			t.Fatalf("send number %d", s.Number)
		}
	})
}

// FuzzHashedTexts holds HashedTexts to its promise on spans whose payloads are read at a
// path (OpenLLMetry's traceloop.entity.input#args and #kwargs.content, MCP's request and
// response): the text it names for the markers of copies is what the attempt's hash
// digests, or the one string of the list the hash digests.
func FuzzHashedTexts(f *testing.F) {
	f.Add(`{"args":["{\"customer_id\":\"cus_1\",\"email\":\"a\u00e9@example.com\"}"]}`,
		`{"lc":1,"kwargs":{"content":"charged \ud83d\ude00 ok","status":"success"}}`)
	f.Add(`{"args":["one","two"]}`, `{"kwargs":{"content":["only"]}}`)
	f.Add(`{"arguments":"{\"card\":\"4111\"}"}`, `{"kwargs":{"content":"\ud800 \u0000 x"}}`)
	f.Add(`{"args":[["nested"]]}`, "{\"kwargs\":{\"content\":\"\xff\xfe\"}}")
	f.Fuzz(func(t *testing.T, args, result string) {
		x := NewExtractor(DefaultConfig(), nil, true)
		hasher := payload.NewHasher(nil)
		for _, attrs := range []map[string]string{
			{"traceloop.entity.input": args, "traceloop.entity.output": result},
			{"request": `{"params":{"name":"t","arguments":` + args + `}}`, "response": `{"result":` + result + `}`},
		} {
			span := ptrace.NewSpan()
			span.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
			span.Attributes().PutStr("gen_ai.tool.name", "t")
			for k, v := range attrs {
				span.Attributes().PutStr(k, v)
			}
			a := x.Extract(span, pcommon.NewResource())
			argsText, resultText := x.HashedTexts(&a)
			for _, c := range [...]struct {
				text HashedText
				hash string
			}{{argsText, a.ArgsHash}, {resultText, a.ResultHash}} {
				if c.text.Text == "" {
					continue
				}
				digested := c.text.Text
				if c.text.Listed {
					list, _ := json.Marshal([]string{c.text.Text})
					digested = string(list)
				}
				if hasher.TextDigest(digested) != c.hash {
					t.Fatalf("HashedTexts names %+v for hash %s, which does not digest it", c.text, c.hash)
				}
			}
		}
	})
}
