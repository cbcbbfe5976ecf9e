package payload

import (
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// agentPayloads is every argument and result payload of 300 traces of the default
// agentsim mix, in every instrumentation's attribute.
func agentPayloads() []pcommon.Value {
	gen, _ := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 5})
	traces := gen.Generate(300)
	var out []pcommon.Value
	for i := range traces {
		td := agenttraffic.TraceToPdata(&traces[i])
		for _, sp := range tracespans.All(td) {
			for k, v := range sp.Attributes().All() {
				switch k {
				case "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value", "tool_input", "tool_response", "ai.toolCall.args", "ai.toolCall.result", "traceloop.entity.input", "traceloop.entity.output", "request", "response":
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// BenchmarkValuePathAgentPayloads digests agent payloads as they come: canonical JSON
// (most are not canonical as sent) and SHA-256.
func BenchmarkValuePathAgentPayloads(b *testing.B) {
	vals := agentPayloads()
	x := NewHasher(nil)
	n := 0
	for _, v := range vals {
		n += len(v.Str())
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, v := range vals {
			x.PayloadDigest(v, nil)
		}
	}
}
