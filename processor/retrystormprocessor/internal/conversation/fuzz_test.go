package conversation

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// FuzzRead reads arbitrary message structures: the reading never panics, every request
// names its tool, and a skim finds exactly the requests (ids and tools) a full reading
// finds — triage and the analysis must agree on them.
func FuzzRead(f *testing.F) {
	for _, messages := range []string{
		`[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"charge","arguments":"{\"a\":1}"}}]}]`,
		`[{"type":"tool_call","id":"<not specified>","name":"charge","arguments":{}},{"type":"tool_call","name":"charge","arguments":{}}]`,
		`{"content":{"parts":[{"functionCall":{"name":"charge","args":{}}}]}}`,
		`{"message":{"content":[{"toolRequest":{"ref":"k1","name":"charge","input":"{\"x\":[1,2]}"}}]}}`,
		`[{"role":"tool","tool_call_id":"c1","content":"[{\"type\":\"tool_call\",\"id\":\"c9\",\"name\":\"x\",\"arguments\":{}}]"}]`,
		`{"a":"[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}]"}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{"type":"tool_call","name":"deep","arguments":{}}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"tool_calls":[{"name":"","args":{}}]}`,
	} {
		f.Add(messages, "gen_ai.output.messages")
		f.Add(messages, "fw.llm.request")
	}
	f.Fuzz(func(t *testing.T, doc, key string) {
		td := ptrace.NewTraces()
		s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetSpanID([8]byte{1})
		s.Attributes().PutStr(key, doc)
		s.Attributes().PutStr("llm.output_messages.0.message.tool_calls.0.tool_call.function.name", doc)
		tree := grouping.NewTree(td)
		full := NewReader().Read(tree, nil, Full)
		skim := NewReader().Read(tree, nil, Skim)
		type id struct{ call, tool string }
		ids := func(c *Conversation) map[id]int {
			m := map[id]int{}
			for _, r := range c.Requests {
				if r.Tool == "" {
					t.Fatalf("a request without a tool: %+v", r)
				}
				m[id{r.CallID, r.Tool}]++
			}
			return m
		}
		f, k := ids(full), ids(skim)
		if len(f) != len(k) {
			t.Fatalf("full reading found %v, skim %v", f, k)
		}
		for i, n := range f {
			if k[i] != n {
				t.Fatalf("full reading found %v, skim %v", f, k)
			}
		}
	})
}
