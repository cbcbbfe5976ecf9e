package agenttraffic

import (
	"strconv"
	"strings"
)

// minRawValue is the shortest raw value the truth lists: shorter leaves ("EUR", "p1", 3)
// turn up in any text by chance, so finding one in an output proves nothing.
const minRawValue = 8

// sentRawValues lists, in call order and once each, the raw values of the plan's payloads
// that some span of the trace carries: a shape that sends only hashes sends none. Left out
// are values the trace also sends outside any payload, by design: asset names
// (retrystorm.read.asset, cited assets) and failure texts that a span status carries. The
// text of an isError result is listed: no status carries it.
func sentRawValues(p *plan, spans []Span) []string {
	skip := map[string]bool{}
	for _, a := range p.citedAssets {
		skip[a] = true
	}
	for i := range spans {
		skip[spans[i].Status.Message] = true
	}
	var candidates []string
	for _, c := range p.calls() {
		skip[c.asset] = true
		for _, a := range c.attempts {
			candidates = payloadLeaves(a.args, candidates)
			candidates = payloadLeaves(a.result, candidates)
			if a.viaResult {
				candidates = payloadLeaves(a.failText, candidates)
			}
			if len(a.idemKey) >= minRawValue {
				candidates = append(candidates, a.idemKey)
			}
		}
	}
	var out []string
	for _, v := range candidates {
		if skip[v] {
			continue
		}
		skip[v] = true
		for i := range spans {
			if spanCarries(&spans[i], v) {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// payloadLeaves appends the string and number leaves of v at least minRawValue long.
func payloadLeaves(v any, out []string) []string {
	switch t := v.(type) {
	case payload:
		for _, k := range sortedKeys(t) {
			out = payloadLeaves(t[k], out)
		}
	case []any:
		for _, e := range t {
			out = payloadLeaves(e, out)
		}
	case string:
		if len(t) >= minRawValue {
			out = append(out, t)
		}
	case int:
		out = payloadLeaves(int64(t), out)
	case int64:
		if s := strconv.FormatInt(t, 10); len(s) >= minRawValue {
			out = append(out, s)
		}
	case float64:
		if s := strconv.FormatFloat(t, 'f', -1, 64); len(s) >= minRawValue {
			out = append(out, s)
		}
	}
	return out
}

// spanCarries reports a span whose attributes or events hold needle.
func spanCarries(s *Span, needle string) bool {
	if attrsCarry(s.Attrs, needle) {
		return true
	}
	for _, e := range s.Events {
		if attrsCarry(e.Attrs, needle) {
			return true
		}
	}
	return false
}

// attrsCarry searches string values, where payloads and their copies travel; numbers are
// found in the JSON texts that carry them.
func attrsCarry(attrs []Attr, needle string) bool {
	for _, a := range attrs {
		switch a.Value.Kind {
		case ValueString:
			if strings.Contains(a.Value.Str, needle) {
				return true
			}
		case ValueStrings:
			for _, s := range a.Value.Strs {
				if strings.Contains(s, needle) {
					return true
				}
			}
		case ValueMap:
			if attrsCarry(a.Value.Map, needle) {
				return true
			}
		}
	}
	return false
}
