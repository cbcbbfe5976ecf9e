package toolspan

import (
	"strings"

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

// IsToolSpan reports whether span matches a recognition rule.
func (x *Extractor) IsToolSpan(span ptrace.Span) bool {
	tool, _ := x.Recognize(span, "")
	return tool
}

// Recognize reports whether span matches a recognition rule and, in the same pass over
// its attributes, whether it carries the attribute also (when not empty). As with
// pcommon.Map.Get, only the first of a repeated key counts.
func (x *Extractor) Recognize(span ptrace.Span, also string) (tool, has bool) {
	r := &x.recognizer
	name := span.Name()
	for _, rule := range r.names {
		if rule.SpanName != "" && name == rule.SpanName || rule.SpanNamePrefix != "" && strings.HasPrefix(name, rule.SpanNamePrefix) {
			tool = true
			break
		}
	}
	attrs := span.Attributes()
	if !r.onePass {
		for _, rule := range r.attrs {
			if v, ok := attrs.Get(rule.Attribute); ok && (rule.Value == "" || v.AsString() == rule.Value) {
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
			if rule.Value == "" || v.AsString() == rule.Value {
				tool = true
			}
		}
	}
	return tool, has
}
