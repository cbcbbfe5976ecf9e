package toolspan

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// recognizeByLookups is recognition as a lookup per rule: the reference Recognize's one
// pass is held to.
func recognizeByLookups(rules []Rule, span ptrace.Span, also string) (tool, has bool) {
	attrs := span.Attributes()
	for _, r := range rules {
		switch {
		case r.Attribute != "":
			v, ok := attrs.Get(r.Attribute)
			tool = tool || ok && (r.Value == "" || strings.EqualFold(strings.TrimSpace(v.AsString()), r.Value))
		case r.SpanName != "":
			tool = tool || strings.EqualFold(strings.TrimSpace(span.Name()), r.SpanName)
		case r.SpanNamePrefix != "":
			tool = tool || strings.HasPrefix(strings.ToLower(strings.TrimSpace(span.Name())), strings.ToLower(r.SpanNamePrefix))
		}
	}
	if also != "" {
		_, has = attrs.Get(also)
	}
	return tool, has
}

// TestRecognizeMatchesLookups compares one-pass recognition with a lookup per rule on
// random spans: rule keys and near misses, repeated keys (the first counts), values of
// every type, span names; with the default rules, rules sharing a key, and more rules than
// one pass tracks.
func TestRecognizeMatchesLookups(t *testing.T) {
	many := []Rule{}
	for i := range maxAttrRules + 3 {
		many = append(many, Rule{Attribute: fmt.Sprintf("k%d", i), Value: "yes"})
	}
	long := strings.Repeat("x", 300)
	ruleSets := map[string][]Rule{
		"default":    DefaultConfig().ToolSpans,
		"shared key": {{Attribute: "kind", Value: "tool"}, {Attribute: "kind", Value: "TOOL"}, {SpanNamePrefix: "call "}},
		"too many":   many,
		"long key":   {{Attribute: long}, {Attribute: "kind", Value: "tool"}},
	}
	keys := []string{"gen_ai.operation.name", "mcp.method.name", "tool_name", "tool_namf", "kind", "k1", "k66", "k0", long,
		"openinference.span.kind", "cited", "other", "http.method"}
	values := []string{"execute_tool", "tools/call", "TOOL", "tool", "yes", "no", ""}
	names := []string{"ai.toolCall", "call x", "claude_code.tool", "MCP request: tools/call get", "chat", ""}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, rules := range ruleSets {
		x := NewExtractor(Config{Recognition: Recognition{ToolSpans: rules}}, nil, false)
		for i := range 5000 {
			// Built as OTLP JSON: repeated keys are invalid OTLP but arrive all the same,
			// and pcommon.Map's Put would not make them.
			var attrs []string
			for range rng.IntN(8) {
				k := keys[rng.IntN(len(keys))]
				var v string
				switch rng.IntN(3) {
				case 0:
					v = fmt.Sprintf(`{"stringValue":%q}`, values[rng.IntN(len(values))])
				case 1:
					v = fmt.Sprintf(`{"intValue":"%d"}`, rng.IntN(3))
				default:
					v = fmt.Sprintf(`{"boolValue":%v}`, rng.IntN(2) == 0)
				}
				attrs = append(attrs, fmt.Sprintf(`{"key":%q,"value":%s}`, k, v))
			}
			doc := fmt.Sprintf(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":%q,"attributes":[%s]}]}]}]}`,
				names[rng.IntN(len(names))], strings.Join(attrs, ","))
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
			also := []string{"", "cited", "kind", long}[rng.IntN(4)]
			tool, has := x.Recognize(span, also)
			wantTool, wantHas := recognizeByLookups(rules, span, also)
			if tool != wantTool || has != wantHas {
				t.Fatalf("%s, span %d %q %v, also %q: Recognize = %v %v, lookups = %v %v",
					name, i, span.Name(), span.Attributes().AsRaw(), also, tool, has, wantTool, wantHas)
			}
		}
	}
}
