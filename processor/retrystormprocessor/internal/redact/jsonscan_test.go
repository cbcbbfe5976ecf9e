package redact

import (
	"regexp"
	"slices"
	"testing"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// TestDependsOnPartMatchesItsDefinition checks the shortcut the scan takes against what it
// stands for: a member waits for its object's end exactly when some classification of the
// object would read it otherwise.
func TestDependsOnPartMatchesItsDefinition(t *testing.T) {
	keys := []string{"arguments", "args", "input", "toolInput", "content", "response", "result", "output",
		"error", "results", "text", "parts", "tool_calls", "toolUse", "id", "name", "type", "role", "kwargs", "messages"}
	values := map[string]string{"string": `"x"`, "json string": `"{\"a\":1}"`, "object": `{"a":1}`, "array": `[1]`, "number": `1`}
	for _, keepText := range []bool{true, false} {
		w := &rewriter{keepText: keepText}
		for _, ctx := range []context{ctxNone, ctxToolText} {
			for _, key := range keys {
				for name, v := range values {
					strEnd := -1
					if v[0] == '"' {
						strEnd = len(v)
					}
					nested := v[0] == '{' || v[0] == '[' || holdsContainer(v)
					want := false
					m0, t0 := w.replacement(messages.Other, ctx, key, v[0] == '"')
					for _, p := range []messages.Part{messages.Call, messages.Result, messages.ToolMessage} {
						m, tx := w.replacement(p, ctx, key, v[0] == '"')
						if m != m0 || tx != t0 || nested && !m && childContext(p, ctx, key) != childContext(messages.Other, ctx, key) {
							want = true
						}
					}
					// The shortcut may say "depends" of more members than strictly do (a
					// result member of any shape waits), never of fewer.
					if got := dependsOnPart(ctx, key, v, 0, strEnd); want && !got {
						t.Errorf("keepText %v ctx %d: member %q holding a %s is read as its object is, but does not wait", keepText, ctx, key, name)
					}
				}
			}
		}
	}
}

// TestKeyOrderDoesNotChangeTheRewriting: a call or a response whose "type" comes after its
// payload (keys sorted, as Go and Python encoders write them) is rewritten as one whose
// "type" comes first.
func TestKeyOrderDoesNotChangeTheRewriting(t *testing.T) {
	args := `{"card":"` + card + `"}`
	for _, tc := range []struct{ typeFirst, typeLast string }{
		{`[{"type":"tool_call","id":"c1","arguments":` + args + `}]`, `[{"arguments":` + args + `,"id":"c1","type":"tool_call"}]`},
		{`[{"type":"tool_call_response","id":"c1","response":{"ok":"` + iban + `"}}]`, `[{"id":"c1","response":{"ok":"` + iban + `"},"type":"tool_call_response"}]`},
		{`[{"role":"tool","content":[{"type":"text","text":"` + email + `"}]}]`, `[{"content":[{"text":"` + email + `","type":"text"}],"role":"tool"}]`},
		{`[{"tool_call_id":"c1","content":"` + token + `"}]`, `[{"content":"` + token + `","tool_call_id":"c1"}]`},
	} {
		w := rewriter{hasher: payload.NewHasher(nil), keepText: true}
		first, ok1 := w.document(tc.typeFirst, "", false, ctxNone, 0)
		w.reset()
		last, ok2 := w.document(tc.typeLast, "", false, ctxNone, 0)
		if !ok1 || !ok2 {
			t.Fatalf("did not parse: %v %v", ok1, ok2)
		}
		assertNoSecret(t, "type first", first)
		assertNoSecret(t, "type last", last)
		// The same markers, whatever the order.
		a, b := markerRE.FindAllString(first, -1), markerRE.FindAllString(last, -1)
		slices.Sort(a)
		slices.Sort(b)
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("%s became %s but %s became %s", tc.typeFirst, first, tc.typeLast, last)
		}
	}
}

var markerRE = regexp.MustCompile(`\[redacted:[0-9a-f]+\]`)
