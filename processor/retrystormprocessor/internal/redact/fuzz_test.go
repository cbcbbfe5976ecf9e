package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// FuzzRedactMessage holds the message rewriting and scrubbing to three rules on any input,
// the document being also the tool's result (read as a message structure when it is one):
// it never panics; a message attribute that parses still parses afterwards (or, not
// parsing, is deleted); and a tool argument value found verbatim in it is gone.
func FuzzRedactMessage(f *testing.F) {
	f.Add(`[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"x","arguments":{"card":"4111111111111111"}}]}]`, "4111111111111111")
	f.Add(`{"messages":"[{\"role\":\"tool\",\"content\":\"4111111111111111\"}]"}`, "4111111111111111")
	f.Add(`[{"toolUse":{"input":{"a":"secret-value-1"}}},{"toolResult":{"content":[{"text":"{\"b\":\"secret-value-1\"}"}]}}]`, "secret-value-1")
	f.Add(`[{"type":"text","content":"say \"hi\" secret\"quoted"}]`, `secret"quoted`)
	f.Add(`{"a":[1,2,{"b":"ééééééééé"}]}`, "ééééééééé")
	f.Add(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{"arguments":"x"}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, "xxxxxxxxx")
	f.Add(`{"broken": "4111111111111111`, "4111111111111111")
	f.Add(`[{"role":"user","content":"x","n":11111111111}]`, "11111111")
	f.Add(`[{"role":"user","content":"ab\\"}]`, `ab\`)
	f.Add(`{"output":{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":"{\"card\":\"4111111111111111\"}","artifact":{"card":"4111111111111111"},"tool_call_id":"call_1"}}}`, "4111111111111111")
	f.Add(`[{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","output":{"type":"json","value":{"card":"4111111111111111"}}}]}]`, "4111111111111111")
	f.Fuzz(func(t *testing.T, doc, secret string) {
		tool := ptrace.NewSpan()
		tool.Attributes().PutEmptyMap("gen_ai.tool.call.arguments").PutStr("v", secret)
		// The document is also the tool's result: a result that is itself a message
		// structure is read as one (gatherMessage), any other leaf by leaf.
		tool.Attributes().PutStr("gen_ai.tool.call.result", doc)
		model := ptrace.NewSpan()
		model.Attributes().PutStr("gen_ai.input.messages", doc)
		model.Attributes().PutStr("other", doc)
		redactTrace(t, testConfig(), tool, model)
		out, kept := model.Attributes().Get("gen_ai.input.messages")
		// A message structure (a JSON object or array) still parses; plain text is text.
		if payload.LooksLikeJSONContainer(doc) && json.Valid([]byte(doc)) && (!kept || !json.Valid([]byte(out.Str()))) {
			t.Fatalf("valid message %q became %q (kept %v)", doc, out.Str(), kept)
		}
		s := strings.TrimSpace(secret)
		if len(s) < testConfig().MinValueLength || !strings.Contains(doc, s) {
			return
		}
		if kept && strings.Contains(out.Str(), s) {
			t.Fatalf("the argument %q survived in the message: %q", s, out.Str())
		}
		if o, _ := model.Attributes().Get("other"); strings.Contains(o.Str(), s) {
			t.Fatalf("the argument %q survived in an unlisted attribute: %q", s, o.Str())
		}
	})
}

// FuzzJSONGrammar holds the scan's grammar to encoding/json's: a document is valid for
// validJSON exactly when json.Valid says so, and the rewriting accepts it exactly then.
func FuzzJSONGrammar(f *testing.F) {
	for _, s := range []string{`{"a":[1,-0.5e+3,true,null,"x\u00e9"]}`, `[01]`, `{"a":1,}`, `"\ud800"`, "\"\x01\"",
		` [ ] `, `{"a" 1}`, `-`, `1.`, `1e`, `"\x"`, `[[[[{"arguments":{"type":"tool_call"}}]]]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		want := json.Valid([]byte(doc))
		if got := validJSON(doc); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", doc, got, want)
		}
		w := rewriter{hasher: payload.NewHasher(nil), keepText: true}
		if _, ok := w.document(doc, "", false, ctxNone, 0); ok != want {
			t.Fatalf("document(%q) ok = %v, encoding/json says %v", doc, ok, want)
		}
	})
}

// FuzzScrubIndex holds the scan to a naive search: Scrub replaces, left to right, the
// longest hunted value at each position, and Holds says whether there is one. The values
// and text are written in four letters, so that values share their prefixes, differ in
// length only, overlap and abut, as URLs and ids of one kind do.
func FuzzScrubIndex(f *testing.F) {
	f.Add("aaaaaaaab|aaaaaaaabb|aaaaaaaabbb|aaaaaaaa0.", "xaaaaaaaabbbaaaaaaaab.aaaaaaaabb", byte(6))
	f.Add("ab0.ab0.ab|b0.ab0.ab0|0.ab0.ab0.", "ab0.ab0.ab0.ab0.ab0.ab0.", byte(6))
	f.Add("aaaa|aaab|aabb", "aaaabbaaab", byte(0))
	f.Add("abababab|babababa|abababababab", "abababababababababa", byte(2))
	f.Fuzz(func(t *testing.T, list, text string, minLen byte) {
		const letters = "ab0."
		spell := func(s string) string {
			b := []byte(s)
			for i := range b {
				b[i] = letters[b[i]%4]
			}
			return string(b)
		}
		var c collector
		c.reset(2+int(minLen)%10, 1<<20)
		var values []string
		for _, v := range strings.Split(list, "|") {
			v = spell(v)
			c.addLeaf(v)
			if len(v) >= c.minLen {
				values = append(values, v)
			}
		}
		vals := &Values{}
		c.build(vals)
		text = spell(text)

		var want strings.Builder
		wantN, holds := 0, false
		for i := 0; i < len(text); {
			best := 0
			for _, v := range values {
				if len(v) > best && strings.HasPrefix(text[i:], v) {
					best = len(v)
				}
			}
			if best == 0 {
				want.WriteByte(text[i])
				i++
				continue
			}
			want.WriteString(Scrubbed)
			i += best
			wantN++
			holds = true
		}
		if got, n := vals.Scrub(text); got != want.String() || n != wantN {
			t.Fatalf("Scrub(%q) of %q = %q, %d; want %q, %d", text, values, got, n, want.String(), wantN)
		}
		if got := vals.Holds(text); got != holds {
			t.Fatalf("Holds(%q) of %q = %v, want %v", text, values, got, holds)
		}
	})
}
