package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/classify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestSelfParentAndParentCycleEndTheWalks(t *testing.T) {
	b := newTrace(40)
	a := b.span("execute_tool x", noParent, 0, 10, genaiTool("x", "c1", `{}`, errored)...)
	bID := b.span("execute_tool x", a, 20, 30, genaiTool("x", "c1", `{}`)...)
	// a's parent is b and b's parent is a: a cycle with no root.
	b.Spans.At(0).SetParentSpanID(bID)
	self := b.span("execute_tool y", noParent, 40, 50, genaiTool("y", "c2", `{}`)...)
	b.Spans.At(2).SetParentSpanID(self)

	tr := analyze(t, b)
	assert.Equal(t, 2, tr.Calls)
	assert.Equal(t, 1, tr.Tree.CutCycles)
}

func TestDuplicateSpanIDsAreCountedNotFatal(t *testing.T) {
	b := newTrace(41)
	root := b.span("invoke_agent a", noParent, 0, 100, agentSpan("a")...)
	b.span("execute_tool x", root, 10, 20, genaiTool("x", "c1", `{}`)...)
	b.span("execute_tool x", root, 30, 40, genaiTool("x", "c1", `{}`)...)
	b.Spans.At(2).SetSpanID(b.Spans.At(1).SpanID())
	tr := analyze(t, b)
	assert.Equal(t, 1, tr.Tree.DuplicateSpanIDs)
	assert.Equal(t, 2, len(tr.Units[0].Attempts()), "both records ran and both count")
}

func TestTenThousandAttemptsOfOneCall(t *testing.T) {
	b := newTrace(42)
	root := b.span("invoke_agent a", noParent, 0, 100, agentSpan("a")...)
	for i := range 10000 {
		b.span("pay", root, int64(i), int64(i+1), attr("tool_name", "pay"), attr("span_id", "s1"),
			attr("attempt", i+1), attr("status", "error"))
	}
	u := onlyUnit(t, analyze(t, b))
	assert.Equal(t, 10000, u.Record.Attempts)
	assert.Equal(t, classify.Exhausted, u.Class)
}

func TestHostileAttributeValues(t *testing.T) {
	huge := strings.Repeat("A", 1<<20)
	values := []any{-1, "-1", "9223372036854775807", "abc", math.NaN(), math.Inf(1), 1e300, 2.5, "", []any{1, 2}, map[string]any{"x": 1}}
	for i, v := range values {
		t.Run(fmt.Sprintf("attempt=%v", v), func(t *testing.T) {
			b := newTrace(byte(50 + i))
			root := b.span("invoke_agent a", noParent, 0, 100, agentSpan("a")...)
			b.span("pay", root, 10, 20, attr("tool_name", "pay"), attr("span_id", "s1"), attr("attempt", v), attr("status", "error"),
				attr("token_in", v), attr("gen_ai.tool.call.arguments", huge), attr("gen_ai.tool.call.result", "{\"isError\": tru\xff"))
			b.span("pay", root, 30, 40, attr("tool_name", "pay\xff"), attr("span_id", "s1"), attr("attempt", 2), attr("status", "ok"),
				attr("gen_ai.tool.call.arguments", `{"a":`+strings.Repeat("[", 5000)+`}`))
			tr := analyze(t, b)
			require.Len(t, tr.Units, 1)
			assert.Equal(t, 2, tr.Units[0].Record.Attempts)
		})
	}
}

func TestEmptyAndToolFreeTraces(t *testing.T) {
	tr := New(DefaultConfig(), nil, nil).Analyze(ptrace.NewTraces())
	assert.Empty(t, tr.Units)
	assert.True(t, tr.Signals.Clean())

	b := newTrace(60)
	b.span("GET /", noParent, 0, 10, status(ptrace.StatusCodeError, "500"))
	tr = analyze(t, b)
	assert.Empty(t, tr.Units)
	assert.True(t, tr.Signals.SpanError)
}

func FuzzAnalyze(f *testing.F) {
	f.Add("execute_tool", "call_1", `{"a":1}`, `{"isError":true}`, "2", int64(10), int64(5), uint8(1))
	f.Add("tools/call", "", `[`, `{"result":{"isError":"true"}}`, "-1", int64(0), int64(0), uint8(0))
	f.Add("chat", "x", "\xff", "", "abc", int64(-5), int64(9), uint8(2))
	f.Fuzz(func(t *testing.T, op, callID, args, result, attempt string, start, dur int64, parentSel uint8) {
		b := newTrace(70)
		root := b.span("invoke_agent a", noParent, 0, 1000, agentSpan("a")...)
		var ids []pcommon.SpanID
		ids = append(ids, root)
		for i := range 4 {
			parent := ids[int(parentSel)%len(ids)]
			parentSel = parentSel*7 + uint8(i)
			ids = append(ids, b.span("span", parent, start+int64(i), start+dur,
				attr("gen_ai.operation.name", op), attr("mcp.method.name", "tools/call"), attr("gen_ai.tool.name", "t"),
				attr("gen_ai.tool.call.id", callID), attr("gen_ai.tool.call.arguments", args),
				attr("gen_ai.tool.call.result", result), attr("attempt", attempt), kind(ptrace.SpanKindClient),
				attr("http.request.method", "POST"), attr("retrystorm.answer.cited_assets", args)))
		}
		// Close a cycle on some inputs.
		if parentSel%3 == 0 {
			b.Spans.At(0).SetParentSpanID(ids[len(ids)-1])
		}
		an := New(DefaultConfig(), nil, nil)
		tr := an.Analyze(b.Traces)
		if q := an.Triage(b.Traces); q.Clean && !tr.Signals.Clean() {
			t.Fatalf("triage proved clean a trace analysis found %+v", tr.Signals)
		}
		for _, u := range tr.Units {
			if len(u.Attempts()) == 0 {
				t.Fatal("a unit without attempts")
			}
		}
	})
}

func TestOrphanSiblingsAreOneCallNotANestedDuplicate(t *testing.T) {
	b := newTrace(80)
	missing := pcommon.SpanID{0xaa, 2}
	b.span("execute_tool fetch", missing, 10, 50, genaiTool("fetch", "call_o", `{}`, errored)...)
	b.span("execute_tool fetch", missing, 60, 90, genaiTool("fetch", "call_o", `{}`)...)
	u := onlyUnit(t, analyze(t, b))
	assert.Equal(t, 2, len(u.Attempts()))
	assert.True(t, u.Storm)
	assert.NotContains(t, kinds(u), "nested_duplicate")
}

func TestInvalidAttemptNumberBesideValidOnesIsIncomplete(t *testing.T) {
	b := newTrace(81)
	root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	b.span("execute_tool reserve", root, 10, 20, genaiTool("reserve", "c1", `{}`, errored, attr("attempt", 1))...)
	b.span("execute_tool reserve", root, 30, 40, genaiTool("reserve", "c1", `{}`, attr("attempt", "abc"))...)
	u := onlyUnit(t, analyze(t, b))
	assert.Contains(t, kinds(u), "incomplete_record")
	assert.Equal(t, 1, u.Record.IncompleteAttempts)
}

func TestTokenSumsSaturateInsteadOfWrapping(t *testing.T) {
	b := newTrace(82)
	root := b.span("invoke_agent a", noParent, 0, 900, agentSpan("a")...)
	huge := attr("gen_ai.usage.input_tokens", int64(math.MaxInt64))
	b.span("execute_tool s", root, 10, 20, genaiTool("s", "c1", `{}`, errored, huge)...)
	b.span("execute_tool s", root, 30, 40, genaiTool("s", "c1", `{}`, huge)...)
	r := onlyUnit(t, analyze(t, b)).Record
	assert.EqualValues(t, int64(math.MaxInt64), *r.TokensIn)
	assert.EqualValues(t, int64(math.MaxInt64), *r.FailedTokensIn)
}
