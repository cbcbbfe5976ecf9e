package redact

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// huntedValueCounts are the trace sizes the benchmarks compare: how many distinct payload
// values a search tool returned, each hunted.
var huntedValueCounts = []int{256, 512, 1024, 2048, 4096}

// BenchmarkHuntedValues measures what redaction costs a kept trace as the payload values
// it hunts grow: a real SDK capture (vercel_ai_v7) plus a search tool whose result holds
// the values, the model call that read the result (its input messages quote it whole) and
// an answer that quotes a few rows in its text and in an attribute nobody lists. One
// iteration gathers the values, deletes the tool spans' payloads and redacts every span,
// as the processor does for a kept trace; ns/B is per byte of the trace's strings.
func BenchmarkHuntedValues(b *testing.B) {
	requests, _ := fixtures.LoadCapture(b, "vercel_ai_v7")
	for _, values := range huntedValueCounts {
		b.Run(fmt.Sprintf("values=%d", values), func(b *testing.B) {
			cfg := testConfig()
			cfg.MaxHuntedValues = values
			r := cfg.new()
			tools, others := searchTrace(requests, values/valuesPerRow)
			trace := append(append([]ptrace.Span{}, tools...), others...)
			size := 0
			for _, s := range trace {
				size += len(spanText(s))
			}
			work := make([]ptrace.Span, len(trace))
			for i := range work {
				work[i] = ptrace.NewSpan()
			}
			var hunted, scrubbed int
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for i, s := range trace {
					s.CopyTo(work[i])
				}
				b.StartTimer()
				vb := r.Values()
				for _, s := range work[:len(tools)] {
					vb.Add(s)
				}
				var st Stats
				vals := vb.Done(&st)
				for _, s := range work[:len(tools)] {
					r.ToolSpan(s, &st)
				}
				for _, s := range work {
					r.Span(s, vals, &st)
				}
				hunted, scrubbed = vals.Len(), st.Scrubbed
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/B")
			b.ReportMetric(float64(hunted), "forms")
			b.ReportMetric(float64(scrubbed), "scrubbed")
		})
	}
}

// BenchmarkScrubText measures the scan alone: the strings of a real SDK capture, which
// hold none of the values, scrubbed of a search result's values. More values leave the
// scan fewer bytes to skip.
func BenchmarkScrubText(b *testing.B) {
	requests, _ := fixtures.LoadCapture(b, "vercel_ai_v7")
	var texts []string
	size := 0
	for _, td := range requests {
		for _, s := range tracespans.All(td) {
			for line := range strings.Lines(spanText(s)) {
				texts = append(texts, line)
				size += len(line)
			}
		}
	}
	for _, values := range huntedValueCounts {
		b.Run(fmt.Sprintf("values=%d", values), func(b *testing.B) {
			cfg := testConfig()
			cfg.MaxHuntedValues = values
			r := cfg.new()
			tools, _ := searchTrace(nil, values/valuesPerRow)
			vb := r.Values()
			vb.Add(tools[0])
			vals := vb.Done(&Stats{})
			benchScan(b, vals, texts, size)
		})
	}
}

// BenchmarkScrubPrefixes measures the scan alone against how the hunted values begin:
// all alike for their first 8 bytes and more (order ids, and URLs at one host, whose
// lengths vary with their numbers), or each its own (hex tokens). The text is the same
// size whatever the count: lines quoting values of the same shape, one in four hunted.
func BenchmarkScrubPrefixes(b *testing.B) {
	shapes := []struct {
		name  string
		value func(i int) string
	}{
		{"shared", func(i int) string {
			if i%2 == 0 {
				return fmt.Sprintf("ord_%012d", i*7919)
			}
			return fmt.Sprintf("https://shop.example.com/orders/%d?item=%d", i*7919, i%97)
		}},
		{"distinct", func(i int) string { return fmt.Sprintf("%016x", uint64(i+1)*0x9E3779B97F4A7C15) }},
	}
	for _, shape := range shapes {
		for _, values := range []int{256, 1024, 4096, 16384} {
			b.Run(fmt.Sprintf("%s/values=%d", shape.name, values), func(b *testing.B) {
				var c collector
				c.reset(DefaultMinValueLength, values)
				for i := range values {
					c.addLeaf(shape.value(i))
				}
				vals := &Values{}
				c.build(vals)
				var texts []string
				size := 0
				for i := range 2000 {
					// i*4 < values: one line in four quotes a hunted value at 256 values, fewer past.
					line := fmt.Sprintf("step %d: looked up %s, then %s; nothing else to report here.\n",
						i, shape.value(i*4%values), shape.value(values+i))
					texts = append(texts, line)
					size += len(line)
				}
				benchScan(b, vals, texts, size)
			})
		}
	}
}

// benchScan times scrubbing texts, size bytes in all, of vals, its index built first.
func benchScan(b *testing.B, vals *Values, texts []string, size int) {
	vals.Scrub("") // the index is built on the first scan
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range texts {
			vals.Scrub(s)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/B")
}

// valuesPerRow are the payload values of one row of searchResult.
const valuesPerRow = 4

// searchResult is a search tool's result of rows distinct rows, each an id, a title, a
// URL and an owner's address, as JSON.
func searchResult(rows int) string {
	var b strings.Builder
	b.WriteString(`{"total":`)
	fmt.Fprint(&b, rows)
	b.WriteString(`,"rows":[`)
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"doc-%06d-%04x","title":"Quarterly revenue report %d for region %c","url":"https://docs.example.com/reports/%06d?rev=%d","owner":"owner.%d@example.com","score":0.%d}`,
			i, i*2654435761%65536, i, 'A'+i%26, i, i%7, i, i%10)
	}
	b.WriteString(`]}`)
	return b.String()
}

// searchTrace is a trace around a search tool that returned rows rows, with the spans of
// requests: its tool spans (the search first), and the other spans, among them the model
// call that read the result and the answer, which quotes the first rows in its text and in
// an attribute nobody lists.
func searchTrace(requests []ptrace.Traces, rows int) (tools, others []ptrace.Span) {
	result := searchResult(rows)
	tool := ptrace.NewSpan()
	tool.SetName("execute_tool search_docs")
	tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	tool.Attributes().PutStr("gen_ai.tool.name", "search_docs")
	tool.Attributes().PutStr("gen_ai.tool.call.arguments", `{"query":"quarterly revenue by region","limit":`+fmt.Sprint(rows)+`}`)
	tool.Attributes().PutStr("gen_ai.tool.call.result", result)
	tools = append(tools, tool)
	for _, td := range requests {
		for _, s := range tracespans.All(td) {
			if _, ok := s.Attributes().Get("gen_ai.tool.call.arguments"); ok {
				tools = append(tools, s)
			} else {
				others = append(others, s)
			}
		}
	}
	model := ptrace.NewSpan()
	model.SetName("chat gpt-4o")
	model.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Which regions grew last quarter?"}]},`+
		`{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"search_docs","arguments":{"query":"quarterly revenue by region"}}]},`+
		`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":`+result+`}]}]`)
	answer := ptrace.NewSpan()
	answer.SetName("invoke_agent analyst")
	var quoted strings.Builder
	for i := range min(rows, 10) {
		fmt.Fprintf(&quoted, "see Quarterly revenue report %d for region %c at https://docs.example.com/reports/%06d?rev=%d; ", i, 'A'+i%26, i, i%7)
	}
	answer.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"`+quoted.String()+`"}]}]`)
	answer.Attributes().PutStr("app.answer.sources", quoted.String())
	answer.Status().SetMessage("no owner for doc-000001-" + fmt.Sprintf("%04x", 2654435761%65536))
	others = append(others, model, answer)
	return tools, others
}
