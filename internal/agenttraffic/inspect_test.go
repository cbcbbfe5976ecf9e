package agenttraffic

import (
	"encoding/json"
	"strings"
)

// The helpers in this file read attempts back from the spans the way a recogniser would,
// without the planner's state, so tests check the truth against what was actually sent.

func strAttr(s *Span, k string) string {
	v, ok := s.Attr(k)
	if !ok || v.Kind != ValueString {
		return ""
	}
	return v.Str
}

func isToolAttempt(shape Shape, s *Span) bool {
	switch shape {
	case ShapeGenAI, ShapeMastra:
		return strings.HasPrefix(s.Name, "execute_tool ")
	case ShapeMCP:
		return strings.HasPrefix(s.Name, "tools/call ")
	case ShapeOpenLLMetryMCP:
		return strAttr(s, "traceloop.span.kind") == "tool"
	case ShapeOpenInference:
		return strAttr(s, "openinference.span.kind") == "TOOL"
	case ShapeVercelV6:
		return s.Name == "ai.toolCall"
	case ShapeClaudeCode:
		return s.Name == "claude_code.tool"
	case ShapeLogfireMCP:
		return strings.HasPrefix(s.Name, "MCP request: tools/call ")
	case ShapeAttemptRecord:
		return strAttr(s, "tool_name") != ""
	case ShapeStrands:
		return strAttr(s, "gen_ai.operation.name") == "execute_tool"
	case ShapeOpenInferenceLangChain, ShapeOpenAIAgents:
		return strAttr(s, "openinference.span.kind") == "TOOL"
	case ShapeUnlisted, ShapeUnlistedOffered:
		return strings.HasPrefix(s.Name, "acme.tool ")
	}
	return false
}

// eventAttr returns attribute k of s's first event named name.
func eventAttr(s *Span, name, k string) string {
	for _, e := range s.Events {
		if e.Name != name {
			continue
		}
		for _, a := range e.Attrs {
			if a.Key == k {
				return a.Value.Str
			}
		}
	}
	return ""
}

// callIDOf returns the call id an attempt is recorded under ("" for shapes without one).
func callIDOf(tr *Trace, s *Span) string {
	switch tr.Truth.Shape {
	case ShapeGenAI, ShapeMastra:
		return strAttr(s, "gen_ai.tool.call.id")
	case ShapeMCP:
		return strAttr(tr.Span(s.Parent), "gen_ai.tool.call.id")
	case ShapeOpenInference:
		return strAttr(s, "tool.id")
	case ShapeVercelV6:
		return strAttr(s, "ai.toolCall.id")
	case ShapeClaudeCode:
		return strAttr(s, "tool_use_id")
	case ShapeAttemptRecord:
		return strAttr(s, "span_id")
	case ShapeStrands:
		return strAttr(s, "gen_ai.tool.call.id")
	case ShapeUnlisted:
		// With content capture off no request names the id: retry_storm keys the calls
		// without it.
		return strAttr(s, "acme.tool.call_id")
	}
	return ""
}

var resultKeys = []string{"gen_ai.tool.call.result", "traceloop.entity.output", "output.value",
	"ai.toolCall.result", "response", "tool_response", "acme.tool.output"}

// resultOf is what an attempt answered: its result attribute, or Strands' gen_ai.choice
// event.
func resultOf(s *Span) string {
	if v := eventAttr(s, "gen_ai.choice", "message"); v != "" {
		return v
	}
	for _, k := range resultKeys {
		if v := strAttr(s, k); v != "" {
			return v
		}
	}
	return ""
}

// statusOf normalises an attempt's status from its span alone (ANALYSIS.md, "Status"). An
// attempt has no outcome (unknown) when its explicit status field is empty, or when a
// pending side effect ended with status unset, no result and no success flag.
func statusOf(s *Span) AttemptStatus {
	if st, ok := s.Attr("status"); ok {
		if st.Str == "" {
			return AttemptUnknown
		}
		return AttemptStatus(st.Str)
	}
	if strAttr(s, "success") == "false" || strAttr(s, "gen_ai.tool.status") == "error" {
		return AttemptError
	}
	if flaggedError(resultOf(s)) {
		return AttemptError
	}
	if s.Status.Code == StatusError {
		if strAttr(s, "error.type") == "timeout" || strings.Contains(s.Status.Message, "timeout") {
			return AttemptTimeout
		}
		return AttemptError
	}
	if se := strAttr(s, "side_effect"); (se == sideEffectUnknown || se == sideEffectExternal) &&
		s.Status.Code == StatusUnset && resultOf(s) == "" && strAttr(s, "success") == "" && strAttr(s, "gen_ai.tool.status") == "" {
		return AttemptUnknown
	}
	return AttemptOK
}

// flaggedError reports an MCP isError (or OpenLLMetry is_error) flag set in a result
// document, or in the result of a JSON-RPC response holding one. Payloads come in each
// shape's JSON style, so the flag is read, not searched for as text.
func flaggedError(res string) bool {
	var doc map[string]any
	if json.Unmarshal([]byte(res), &doc) != nil {
		return false
	}
	if inner, ok := doc["result"].(map[string]any); ok {
		doc = inner
	}
	return doc["isError"] == true || doc["is_error"] == true
}

func httpChildren(tr *Trace, parent SpanID) []*Span {
	var out []*Span
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if s.Parent == parent && strAttr(s, "http.request.method") != "" {
			out = append(out, s)
		}
	}
	return out
}

func sendStatusOf(s *Span) AttemptStatus {
	code, ok := s.Attr("http.response.status_code")
	if s.Status.Code == StatusError || !ok || code.Int >= 500 {
		return AttemptError
	}
	return AttemptOK
}

// agentOf returns the nearest invoke_agent ancestor of s.
func agentOf(tr *Trace, s *Span) *Span {
	for p := tr.Span(s.Parent); p != nil; p = tr.Span(p.Parent) {
		if strAttr(p, "gen_ai.operation.name") == "invoke_agent" {
			return p
		}
	}
	return nil
}

// isAgentRoot reports a root span that is the agent's: invoke_agent, OpenInference's AGENT,
// LangChain's CHAIN named after the agent it runs, or Acme's run.
func isAgentRoot(s *Span) bool {
	switch {
	case strAttr(s, "gen_ai.operation.name") == "invoke_agent", strAttr(s, "openinference.span.kind") == "AGENT",
		s.Name == "acme.agent.run" && strAttr(s, "acme.agent.name") != "":
		return true
	case strAttr(s, "openinference.span.kind") == "CHAIN":
		var md map[string]any
		return json.Unmarshal([]byte(strAttr(s, "metadata")), &md) == nil && md["lc_agent_name"] == s.Name
	}
	return false
}

// rootAttempts lists the tool attempts the root agent made: not a subagent's re-record of
// a call, which hangs under the attempt it re-records.
func rootAttempts(tr *Trace) []*Span {
	var out []*Span
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if isToolAttempt(tr.Truth.Shape, s) && !underAttempt(tr, s) {
			out = append(out, s)
		}
	}
	return out
}

func underAttempt(tr *Trace, s *Span) bool {
	for p := tr.Span(s.Parent); p != nil; p = tr.Span(p.Parent) {
		if isToolAttempt(tr.Truth.Shape, p) {
			return true
		}
	}
	return false
}

func spanByHex(tr *Trace, id string) *Span {
	for i := range tr.Spans {
		if tr.Spans[i].ID.String() == id {
			return &tr.Spans[i]
		}
	}
	return nil
}
