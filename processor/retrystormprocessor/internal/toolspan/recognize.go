package toolspan

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// recognizer holds the recognition rules for one pass over a span's attributes: most
// spans are not tool spans, and looking up each attribute rule's key would walk their
// attributes once per rule.
type recognizer struct {
	names   []Rule // span-name rules
	attrs   []Rule // attribute rules, at most maxAttrRules
	onePass bool
	// lens has bit n set when an attribute rule's key is n bytes long (n < 256).
	lens [4]uint64
	// long is true when a key is 256 bytes or longer: such attributes are always checked.
	long bool
}

const maxAttrRules = 64

func newRecognizer(rules []Rule) recognizer {
	var r recognizer
	for _, rule := range rules {
		if rule.Attribute == "" {
			r.names = append(r.names, rule)
			continue
		}
		r.attrs = append(r.attrs, rule)
		if n := len(rule.Attribute); n < 256 {
			r.lens[n>>6] |= 1 << (n & 63)
		} else {
			r.long = true
		}
	}
	r.onePass = len(r.attrs) <= maxAttrRules
	return r
}

func (r *recognizer) mayBeRuleKey(k string) bool {
	if n := len(k); n < 256 {
		return r.lens[n>>6]&(1<<(n&63)) != 0
	}
	return r.long
}

// valueMatches reports whether an attribute value matches a rule's value: any value when
// the rule has none, else the value's text with surrounding white space ignored, in any
// case ("TOOL", "tool " and "Tool" match TOOL): instrumentations and hand-written spans
// differ in both, and a tool span missed is a tool span whose payload is not redacted.
func valueMatches(v pcommon.Value, want string) bool {
	if want == "" {
		return true
	}
	if v.Type() == pcommon.ValueTypeStr {
		return strings.EqualFold(strings.TrimSpace(v.Str()), want)
	}
	return strings.EqualFold(v.AsString(), want)
}

// hasPrefixFold is strings.HasPrefix ignoring case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// IsToolSpan reports whether span matches a recognition rule.
func (x *Extractor) IsToolSpan(span ptrace.Span) bool {
	tool, _ := x.Recognize(span, "")
	return tool
}

// Recognize reports whether span matches a recognition rule and no not_tool_spans rule
// and, in the same pass over its attributes, whether it carries the attribute also (when
// not empty). As with pcommon.Map.Get, only the first of a repeated key counts.
func (x *Extractor) Recognize(span ptrace.Span, also string) (tool, has bool) {
	tool, has = x.recognizer.match(span, also)
	if tool && !x.notTools.empty() {
		if excluded, _ := x.notTools.match(span, ""); excluded {
			tool = false
		}
	}
	return tool, has
}

// empty reports a recognizer without rules.
func (r *recognizer) empty() bool { return len(r.names) == 0 && len(r.attrs) == 0 }

// IsAgentSpan reports whether span matches a recognition.agent_spans rule.
func (x *Extractor) IsAgentSpan(span ptrace.Span) bool {
	agent, _ := x.agents.match(span, "")
	return agent
}

// match reports whether span matches one of r's rules and whether it carries the
// attribute also (when not empty), in one pass over its attributes.
func (r *recognizer) match(span ptrace.Span, also string) (tool, has bool) {
	name := strings.TrimSpace(span.Name())
	for _, rule := range r.names {
		if rule.SpanName != "" && strings.EqualFold(name, rule.SpanName) || rule.SpanNamePrefix != "" && hasPrefixFold(name, rule.SpanNamePrefix) {
			tool = true
			break
		}
	}
	attrs := span.Attributes()
	if !r.onePass {
		for _, rule := range r.attrs {
			if v, ok := attrs.Get(rule.Attribute); ok && valueMatches(v, rule.Value) {
				tool = true
				break
			}
		}
		if also != "" {
			_, has = attrs.Get(also)
		}
		return tool, has
	}
	if tool && also == "" || len(r.attrs) == 0 && also == "" {
		return tool, false
	}
	var seen uint64 // rule i has met its key
	for k, v := range attrs.All() {
		if also != "" && !has && k == also {
			has = true
		}
		if tool {
			if has || also == "" {
				break
			}
			continue
		}
		if !r.mayBeRuleKey(k) {
			continue
		}
		for i := range r.attrs {
			rule := &r.attrs[i]
			if seen&(1<<i) != 0 || rule.Attribute != k {
				continue
			}
			seen |= 1 << i
			if valueMatches(v, rule.Value) {
				tool = true
			}
		}
	}
	return tool, has
}
