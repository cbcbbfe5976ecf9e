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
	case ShapeSeedRecord:
		return strAttr(s, "tool_name") != ""
	}
	return false
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
	case ShapeSeedRecord:
		return strAttr(s, "span_id")
	}
	return ""
}

var resultKeys = []string{"gen_ai.tool.call.result", "traceloop.entity.output", "output.value",
	"ai.toolCall.result", "response", "tool_response"}

func resultOf(s *Span) string {
	for _, k := range resultKeys {
		if v := strAttr(s, k); v != "" {
			return v
		}
	}
	return ""
}

// statusOf normalises an attempt's status from its span alone (DESIGN.md, "Status"). An
// attempt has no outcome (unknown) when its explicit status field is empty, or when a
// pending side effect ended with status unset, no result and no success flag.
func statusOf(s *Span) AttemptStatus {
	if st, ok := s.Attr("status"); ok {
		if st.Str == "" {
			return AttemptUnknown
		}
		return AttemptStatus(st.Str)
	}
	if strAttr(s, "success") == "false" {
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
		s.Status.Code == StatusUnset && resultOf(s) == "" && strAttr(s, "success") == "" {
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

// rootAttempts lists the tool attempts the root agent made (a subagent's re-record of a
// call is not one).
func rootAttempts(tr *Trace) []*Span {
	root := tr.Root()
	var out []*Span
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if isToolAttempt(tr.Truth.Shape, s) && agentOf(tr, s) == root {
			out = append(out, s)
		}
	}
	return out
}

func spanByHex(tr *Trace, id string) *Span {
	for i := range tr.Spans {
		if tr.Spans[i].ID.String() == id {
			return &tr.Spans[i]
		}
	}
	return nil
}
