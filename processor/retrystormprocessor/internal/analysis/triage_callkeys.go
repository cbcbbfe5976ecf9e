package analysis

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// oneAttemptPerCall stops when two attempts share a call key, counting the degraded
// ones. Calls groups by the key string. A call id is its own key. A fallback key,
// "fallback:<parent>:<tool>:<args hash or logical span>", holds the args hash, which a
// glance does not compute; so fallback-keyed attempts are first grouped by parent and tool,
// and only in groups of two or more are the args compared, by fingerprint. A tool name
// holding ':' could make two different (tool, args) pairs spell one key, and a call id
// spelled like a fallback key could equal one: then every fallback key is computed and
// compared.
func (an *Analyzer) oneAttemptPerCall(q *IndexedTrace, attempts []grouping.Attempt) triageStop {
	t := q.Tree
	keys := an.scratch.keys // full keys seen
	clear(keys)
	groups := an.scratch.groups // parent and tool of fallback-keyed attempts -> count
	clear(groups)
	degraded := an.scratch.degraded[:0]
	defer func() { an.scratch.degraded = degraded[:0] }()
	ambiguous := false
	for i := range attempts {
		k := grouping.Identify(t, &attempts[i])
		if !k.Degraded {
			if _, dup := keys[k.ID]; dup {
				return stopSharedCallKey
			}
			keys[k.ID] = i
			ambiguous = ambiguous || strings.HasPrefix(k.ID, "fallback:")
			continue
		}
		q.DegradedCalls++
		degraded = append(degraded, i)
		ambiguous = ambiguous || strings.Contains(k.Tool, ":")
		groups[groupKey{parent: k.Parent, tool: k.Tool}]++
	}
	if ambiguous {
		for _, i := range degraded {
			a := &attempts[i]
			if a.Logical < 0 {
				a.ArgsHash = an.x.ArgsDigest(a.Span)
			}
			key := grouping.Identify(t, a).Key()
			if _, dup := keys[key]; dup {
				return stopSharedFallbackKey
			}
			keys[key] = i
		}
		return ""
	}
	// Same parent and a tool name without ':': the keys are equal exactly when the part
	// after the tool name is, the logical span or the args hash. Args are told apart by the
	// fingerprints of what would be hashed (ArgsIdentity); a group where an attempt carries
	// its args hash is hashed whole, since only hashing compares a given hash with args.
	seen := an.scratch.seen[:0]
	hashed := an.scratch.hashed
	clear(hashed)
	defer func() { clear(seen); an.scratch.seen = seen[:0] }()
	for _, i := range degraded {
		a := &attempts[i]
		d := degradedAttempt{id: grouping.Identify(t, a)}
		g := groupKey{parent: d.id.Parent, tool: d.id.Tool}
		if groups[g] >= 2 && a.Logical < 0 {
			var given string
			given, d.fingerprint, d.found = an.x.ArgsIdentity(a.Span)
			if given != "" {
				hashed[g] = struct{}{}
			}
		}
		seen = append(seen, d)
	}
	tails := an.scratch.tails
	clear(tails)
	for j, i := range degraded {
		a, d := &attempts[i], &seen[j]
		g := groupKey{parent: d.id.Parent, tool: d.id.Tool}
		if groups[g] < 2 {
			continue
		}
		tail := g
		_, hashGroup := hashed[g]
		switch {
		case a.Logical >= 0:
			tail.tail = d.id.Logical.String()
		case hashGroup:
			a.ArgsHash = an.x.ArgsDigest(a.Span)
			tail.tail = grouping.Identify(t, a).Args
		case d.found:
			tail.fingerprint, tail.fingerprinted = d.fingerprint, true
		}
		// Otherwise no argument source: the empty args hash, as the analysis keys it.
		if _, dup := tails[tail]; dup {
			return stopSharedFallbackKey
		}
		tails[tail] = struct{}{}
	}
	return ""
}

// degradedAttempt is what oneAttemptPerCall reads of a fallback-keyed attempt: its identity
// and, in a group of two or more, the fingerprint of its args (found: it has args).
type degradedAttempt struct {
	id          grouping.Identity
	fingerprint uint64
	found       bool
}

// groupKey is the part of a fallback key a glance knows, parent and tool, and then the rest
// of it: the logical span or the args hash as the key spells them (tail), or the args'
// fingerprint (fingerprint, when fingerprinted).
type groupKey struct {
	parent        pcommon.SpanID
	tool          string
	tail          string
	fingerprint   uint64
	fingerprinted bool
}
