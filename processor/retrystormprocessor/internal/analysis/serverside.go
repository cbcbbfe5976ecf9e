package analysis

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

// The server side of a tool call: an MCP client's tools/call span and the server's span
// that handled it are one attempt, not two calls. A tool span below another tool span
// that is itself a SERVER span or whose parent is one, and a tool span whose parent is a
// server span of OpenLLMetry's (traceloop.span.kind=server, which its FastMCP
// instrumentation opens beside the client's span, not under it), ran in the service a
// client called: it is no attempt of its own. Its payload is redacted with the tool spans', and a failure
// it shows fails the client's attempt above it (the MCP Python SDK sets the error on the
// server span only).

// markServerSide appends to out the tool spans isTool marks that are a call's server side.
func markServerSide(t *grouping.Tree, isTool []bool, out []int32) []int32 {
	for i := range t.Nodes {
		if !isTool[i] {
			continue
		}
		p := t.Nodes[i].Parent
		if p >= 0 && traceloopServer(t.Nodes[p].Span) {
			out = append(out, int32(i))
			continue
		}
		underServer := t.Nodes[i].Span.Kind() == ptrace.SpanKindServer || p >= 0 && t.Nodes[p].Span.Kind() == ptrace.SpanKindServer
		if underServer && toolAncestor(t, int32(i), isTool) >= 0 {
			out = append(out, int32(i))
		}
	}
	return out
}

// toolAncestor is the nearest tool span above i, or -1.
func toolAncestor(t *grouping.Tree, i int32, isTool []bool) int32 {
	cur := t.Nodes[i].Parent
	for steps := 0; cur >= 0 && steps < len(t.Nodes); steps++ {
		if isTool[cur] {
			return cur
		}
		cur = t.Nodes[cur].Parent
	}
	return -1
}

func traceloopServer(span ptrace.Span) bool {
	v, ok := span.Attributes().Get("traceloop.span.kind")
	return ok && strings.EqualFold(strings.TrimSpace(v.AsString()), "server")
}

// ServerSideReport is the failure report of an attempt whose server side failed while the
// client's span did not say so: source=value, no payload.
const ServerSideReport = "server_side.status=error"

// failFromServerSide fails each attempt whose server side, below it, failed.
func (an *Analyzer) failFromServerSide(t *grouping.Tree, server []int32, isTool []bool, attempts []*grouping.Attempt) {
	if len(server) == 0 {
		return
	}
	byNode := make(map[int32]*grouping.Attempt, len(attempts))
	for _, a := range attempts {
		byNode[a.Node] = a
	}
	for _, s := range server {
		a, ok := byNode[toolAncestor(t, s, isTool)]
		if !ok || a.Status.Failed() || a.Status == outcome.Unknown {
			continue
		}
		side := an.x.Extract(t.Nodes[s].Span, t.Nodes[s].Resource)
		if !side.Status.Failed() {
			continue
		}
		an.x.FailFrom(&a.Attempt, side.Status, ServerSideReport)
	}
}
