package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// FuzzRedactMessage holds the message rewriting and scrubbing to three rules on any input:
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
	f.Fuzz(func(t *testing.T, doc, secret string) {
		tool := ptrace.NewSpan()
		tool.Attributes().PutEmptyMap("gen_ai.tool.call.arguments").PutStr("v", secret)
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
