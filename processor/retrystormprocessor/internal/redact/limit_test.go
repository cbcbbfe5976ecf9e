package redact

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// TestValuesPastTheLimitAreCountedNotHunted: a search result holding more distinct values
// than MaxValues hunts the first MaxValues (each in all its forms, which take no place of
// their own) in the other spans of the trace, and counts each value past the limit once,
// repeats, short values and the trace's tool names aside.
func TestValuesPastTheLimitAreCountedNotHunted(t *testing.T) {
	hunted := []string{"acct-000000000001", `memo "urgent" payroll`, "jane.doe@example.com"}
	past := []string{"acct-000000000004", "acct-000000000005"}
	cfg := testConfig()
	cfg.MaxHuntedValues = len(hunted)
	tool := ptrace.NewSpan()
	tool.SetName("execute_tool search_ledger")
	var rows []string
	for _, v := range append(append(append([]string{}, hunted...), past...), past[0], "ok", "search_ledger") {
		rows = append(rows, fmt.Sprintf("%q", v))
	}
	tool.Attributes().PutStr("gen_ai.tool.call.result", "["+strings.Join(rows, ",")+"]")
	other := ptrace.NewSpan()
	other.SetName("invoke_agent books")
	other.Attributes().PutStr("app.debug.note", "found "+strings.Join(append(append([]string{}, hunted...), past...), " | "))
	other.Attributes().PutStr("app.debug.json", `{"memo":"memo \"urgent\" payroll"}`)
	other.Status().SetMessage("no match for " + hunted[0])

	r := cfg.new()
	b := r.Values()
	b.Add(tool)
	b.Exclude("search_ledger")
	var st Stats
	vals := b.Done(&st)
	r.ToolSpan(tool, &st)
	r.Span(other, vals, &st)

	text := spanText(other)
	for _, v := range append(hunted, `memo \"urgent\" payroll`) {
		if strings.Contains(text, v) {
			t.Errorf("%q is within the limit but was not scrubbed:\n%s", v, text)
		}
	}
	for _, v := range past {
		if !strings.Contains(text, v) {
			t.Errorf("%q is past the limit, yet it was scrubbed: the test no longer shows the limit", v)
		}
	}
	if st.NotHunted != len(past) {
		t.Errorf("NotHunted = %d, want %d (the values past the limit, each once)", st.NotHunted, len(past))
	}
	if vals.values != len(hunted) {
		t.Errorf("values = %d, want %d", vals.values, len(hunted))
	}
}

// TestMergeKeepsToTheLimit: the values a decision remembered and those of late tool spans
// are merged up to the limit; a value both hold is not new, and each new value left out
// is counted once, whatever its forms.
func TestMergeKeepsToTheLimit(t *testing.T) {
	cfg := testConfig()
	cfg.MaxHuntedValues = 3
	r := cfg.new()
	gather := func(values ...string) *Values {
		s := ptrace.NewSpan()
		var quoted []string
		for _, v := range values {
			quoted = append(quoted, fmt.Sprintf("%q", v))
		}
		s.Attributes().PutStr("gen_ai.tool.call.result", "["+strings.Join(quoted, ",")+"]")
		b := r.Values()
		b.Add(s)
		return b.Done(&Stats{})
	}
	known := gather("order-0000000001", "order-0000000002")
	late := gather("order-0000000002", "late value one", "late value two")
	var st Stats
	merged := known.Merge(late, &st)
	if merged.values != 3 || st.NotHunted != 1 {
		t.Fatalf("merged %d values, %d not hunted; want 3 and 1", merged.values, st.NotHunted)
	}
	if known.values != 2 {
		t.Errorf("Merge changed the values it was called on: %d", known.values)
	}
	out, n := merged.Scrub("order-0000000001 order-0000000002 late value one late%20value%20one late value two")
	if n != 4 || !strings.HasSuffix(out, "late value two") {
		t.Errorf("Scrub = %q, %d: want the three merged values (one URL-escaped too) scrubbed, the fourth kept", out, n)
	}
	// Merged again with the same late values: nothing new, nothing more left out.
	st = Stats{}
	if again := merged.Merge(late, &st); again.values != 3 || st.NotHunted != 1 {
		t.Errorf("merged again: %d values, %d not hunted; want 3 and 1", again.values, st.NotHunted)
	}
}

// TestAnExcludedFormLeavesItsValueWhole: a tool name is excluded as it is, and its other
// forms (URL-escaped) stay hunted as one value, which Merge still counts as one.
func TestAnExcludedFormLeavesItsValueWhole(t *testing.T) {
	cfg := testConfig()
	cfg.MaxHuntedValues = 3
	r := cfg.new()
	s := ptrace.NewSpan()
	s.Attributes().PutStr("gen_ai.tool.call.arguments", `{"tool":"search docs","order":"order-0000000001"}`)
	b := r.Values()
	b.Add(s)
	b.Exclude("search docs")
	vals := b.Done(&Stats{})
	if vals.values != 2 {
		t.Fatalf("values = %d, want 2: the tool name's URL forms and the order", vals.values)
	}
	if out, n := vals.Scrub("search docs?q=search%20docs"); n != 1 || !strings.HasPrefix(out, "search docs?q=") {
		t.Errorf("Scrub = %q, %d: the name as it is stays, its URL form goes", out, n)
	}
	late := ptrace.NewSpan()
	late.Attributes().PutStr("gen_ai.tool.call.result", `["order-0000000002","order-0000000003"]`)
	b = r.Values()
	b.Add(late)
	var st Stats
	if merged := vals.Merge(b.Done(&Stats{}), &st); merged.values != 3 || st.NotHunted != 1 {
		t.Errorf("merged %d values, %d not hunted; want 3 and 1", merged.values, st.NotHunted)
	}
}

// TestHashedTextsAreRememberedAndMerged: the listed texts a trace marks with their
// attempts' hashes (whose copies' own hashes differ) outlive the trace's redaction in its
// values, others not (a copy's own hash is the attempt's); a trace whose payloads are all
// shorter than the minimum length still remembers them, Merge keeps those of both sides
// once each, and a later redaction told of them marks a copy with the attempt's hash, not
// the copy's own.
func TestHashedTextsAreRememberedAndMerged(t *testing.T) {
	r := testConfig().new()
	const attemptHash = "00000000000000000000000000000000000000000000000000000000000000aa"
	b := r.Values()
	b.Hashed(toolspan.HashedText{Text: `{"q":"x"}`, Listed: true}, attemptHash)
	b.Hashed(toolspan.HashedText{Text: "its own digest"}, "00000000000000000000000000000000000000000000000000000000000000cc")
	vals := b.Done(&Stats{})
	if vals == nil || len(vals.hashed) != 1 || vals.Len() != 0 {
		t.Fatalf("Done = %+v: want the one hashed text and no value to hunt", vals)
	}
	b = r.Values()
	b.Hashed(toolspan.HashedText{Text: `{"q":"x"}`, Listed: true}, attemptHash)
	b.Hashed(toolspan.HashedText{Text: "other text", Listed: true}, "00000000000000000000000000000000000000000000000000000000000000bb")
	var st Stats
	merged := vals.Merge(b.Done(&st), &st)
	if len(merged.hashed) != 2 || len(vals.hashed) != 1 {
		t.Fatalf("merged %d hashed texts (the receiver now %d); want 2 and 1", len(merged.hashed), len(vals.hashed))
	}
	if c := merged.Unindexed().Clone(); len(c.hashed) != 2 {
		t.Errorf("Clone kept %d hashed texts, want 2", len(c.hashed))
	}

	r.Values() // a new trace: the rewriting knows no text
	r.MarkAsHashed(merged)
	span := ptrace.NewSpan()
	span.Attributes().PutStr("gen_ai.input.messages",
		`[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"lookup","arguments":"{\"q\":\"x\"}"}]}]`)
	r.Span(span, merged, &st)
	if text := spanText(span); !strings.Contains(text, "[redacted:"+attemptHash+"]") {
		t.Errorf("the copy is not marked with the attempt's hash:\n%s", text)
	}
}
