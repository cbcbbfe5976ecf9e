// Package findings detects divergences between what a trace claims and what ran
// (ANALYSIS.md, "Findings").
package findings // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"

import (
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Finding kinds.
const (
	UnrecoveredFailure  = "unrecovered_failure"
	ResultDrift         = "result_drift"
	StaleCacheSuspect   = "stale_cache_suspect"
	DuplicateSideEffect = "duplicate_side_effect"
	UnresolvedAttempt   = "unresolved_attempt"
	AttemptGap          = "attempt_gap"
	NestedDuplicate     = "nested_duplicate"
	UnbackedCitation    = "unbacked_citation"
	IncompleteRecord    = "incomplete_record"
)

// Kinds lists every finding kind, for telemetry and docs.
var Kinds = []string{UnrecoveredFailure, ResultDrift, StaleCacheSuspect, DuplicateSideEffect,
	UnresolvedAttempt, AttemptGap, NestedDuplicate, UnbackedCitation, IncompleteRecord}

// Finding is one divergence, on the span it concerns.
type Finding struct {
	Kind    string
	Detail  string
	Span    ptrace.Span
	CallKey string
}

// ResultMemory remembers result hashes across traces, bounded, for the stale-cache check.
// Implementations must be safe for concurrent use.
type ResultMemory interface {
	// Recall returns when, and in which trace, a result was first seen, by the 64-bit
	// fingerprint of its canonical form (toolspan.Attempt.ResultFingerprint).
	Recall(fingerprint uint64) (first pcommon.Timestamp, trace pcommon.TraceID, ok bool)
	// Remember records a sighting; an earlier first sighting is kept. It returns the
	// suspects of traces decided earlier that the sighting resolves (stalecache.Hold).
	Remember(fingerprint uint64, at pcommon.Timestamp, trace pcommon.TraceID) []stalecache.Match
}

// Suspect is an attempt that looks like a stale read — ok right after a failure, far
// faster than its siblings — whose result no other trace has shown min_age earlier yet:
// the trace it was copied from may not be decided yet. The processor holds it for a
// recheck (stalecache.Hold).
type Suspect struct {
	Span    ptrace.Span
	CallKey string
	Order   int
	// Duration is the attempt's, in nanoseconds.
	Duration    int64
	Fingerprint uint64
	Start       pcommon.Timestamp
}

// Detail is the detail of the stale_cache_suspect finding the suspect is once the result
// is known to have been seen first at first, in trace.
func (s *Suspect) Detail(first pcommon.Timestamp, trace pcommon.TraceID) string {
	return fmt.Sprintf("attempt %d returned in %s after a failure with a result first seen %s earlier in trace %s",
		s.Order, time.Duration(s.Duration), time.Duration(int64(s.Start)-int64(first)).Round(time.Second), trace)
}

// Unit checks one record unit and returns its findings, its stale-cache suspects not
// resolved yet and the number of incomplete attempts. mem may be nil (no stale-cache check).
func Unit(cfg *Rules, t *grouping.Tree, u *grouping.Unit, mem ResultMemory, traceID pcommon.TraceID) ([]Finding, []Suspect, int) {
	var out []Finding
	key := u.Key()
	add := func(kind string, span ptrace.Span, detail string) {
		out = append(out, Finding{Kind: kind, Detail: detail, Span: span, CallKey: key})
	}
	for _, c := range u.Calls {
		if last := c.Last(); last.Status == outcome.Unknown {
			add(UnresolvedAttempt, last.Span, fmt.Sprintf("attempt %d of %s has no outcome", last.Order, last.ToolName))
		}
		if c.NumberIssue != "" {
			add(AttemptGap, c.Last().Span, c.NumberIssue)
		}
		for _, d := range c.Duplicates {
			add(NestedDuplicate, d.Span, fmt.Sprintf("call id %s also recorded by an outer agent; counted once", c.Key))
		}
	}
	if f, ok := unrecovered(cfg, t, u); ok {
		out = append(out, f)
	}
	if detail, span, ok := drift(u); ok {
		add(ResultDrift, span, detail)
	}
	var suspects []Suspect
	if mem != nil {
		var stale []Finding
		stale, suspects = staleCache(cfg, u, mem, traceID)
		out = append(out, stale...)
	}
	incomplete, detail := incompleteAttempts(cfg, u)
	if incomplete > 0 {
		add(IncompleteRecord, u.Last().Span, detail)
	}
	return out, suspects, incomplete
}

// unrecovered: the unit's last attempt failed and its agent span (or the root) ended
// OK or unset without a caveat attribute — a green answer over a failed call.
func unrecovered(cfg *Rules, t *grouping.Tree, u *grouping.Unit) (Finding, bool) {
	last := u.Last()
	if !last.Status.Failed() || last.Agent == last.Node || last.Agent < 0 {
		return Finding{}, false
	}
	agent := t.Nodes[last.Agent].Span
	if agent.Status().Code() == ptrace.StatusCodeError {
		return Finding{}, false
	}
	if _, caveat := agent.Attributes().Get(cfg.CaveatAttribute); caveat {
		return Finding{}, false
	}
	return Finding{
		Kind:    UnrecoveredFailure,
		Detail:  fmt.Sprintf("%s ended %s after %d attempts; %q reports success without a caveat", last.ToolName, last.Status, len(u.Attempts()), agent.Name()),
		Span:    agent,
		CallKey: u.Key(),
	}, true
}

// drift: ok attempts with one args hash returned different result hashes.
func drift(u *grouping.Unit) (string, ptrace.Span, bool) {
	first := map[string]string{}
	for _, a := range u.Attempts() {
		if a.Status != outcome.OK || a.ResultHash == "" {
			continue
		}
		prev, seen := first[a.ArgsHash]
		if !seen {
			first[a.ArgsHash] = a.ResultHash
			continue
		}
		if prev != a.ResultHash {
			return fmt.Sprintf("attempt %d of %s returned a different result for the same arguments", a.Order, a.ToolName), a.Span, true
		}
	}
	return "", ptrace.Span{}, false
}

// staleCache: an ok attempt right after a failure that returned far faster than its
// siblings, with a result first seen at least min_age earlier in another trace. Such an
// attempt whose result has not been seen so yet is a suspect: the earlier trace may be
// decided after this one.
func staleCache(cfg *Rules, u *grouping.Unit, mem ResultMemory, traceID pcommon.TraceID) ([]Finding, []Suspect) {
	attempts := u.Attempts()
	var out []Finding
	var suspects []Suspect
	for i, a := range attempts {
		if i == 0 || a.Status != outcome.OK || a.ResultHash == "" || !attempts[i-1].Status.Failed() {
			continue
		}
		dur, others := a.DurationNanos(), siblingMean(attempts, i)
		if others == 0 || float64(dur) > cfg.StaleCache.MaxDurationRatio*others || dur > cfg.StaleCache.MaxDuration.Nanoseconds() {
			continue
		}
		s := Suspect{Span: a.Span, CallKey: u.Key(), Order: a.Order, Duration: dur, Fingerprint: a.ResultFingerprint, Start: a.Start}
		firstSeen, trace, ok := mem.Recall(a.ResultFingerprint)
		if !ok || trace == traceID || !cfg.StaleCache.SeenEarlier(firstSeen, a.Start) {
			suspects = append(suspects, s)
			continue
		}
		out = append(out, Finding{Kind: StaleCacheSuspect, Span: a.Span, CallKey: u.Key(), Detail: s.Detail(firstSeen, trace)})
	}
	return out, suspects
}

func siblingMean(attempts []*grouping.Attempt, skip int) float64 {
	var sum float64
	n := 0
	for i, a := range attempts {
		if i != skip {
			sum += float64(a.DurationNanos())
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// RememberResults records the unit's ok results after the unit was checked, so an
// attempt never matches its own trace, and returns the held suspects they resolve.
func RememberResults(u *grouping.Unit, mem ResultMemory, traceID pcommon.TraceID) []stalecache.Match {
	var out []stalecache.Match
	for _, a := range u.Attempts() {
		if a.Status == outcome.OK && a.ResultHash != "" {
			out = append(out, mem.Remember(a.ResultFingerprint, a.Start, traceID)...)
		}
	}
	return out
}

// incompleteAttempts counts attempts missing a required field, or a field that other
// attempts of the same call carry.
func incompleteAttempts(cfg *Rules, u *grouping.Unit) (int, string) {
	n := 0
	var missing toolspan.Field
	for _, c := range u.Calls {
		var carried toolspan.Field
		for _, a := range c.Attempts {
			carried |= a.Present
		}
		want := cfg.Required | (carried & cfg.Carried)
		for _, a := range c.Attempts {
			if lack := want &^ a.Present; lack != 0 {
				n++
				missing |= lack
			}
		}
	}
	if n == 0 {
		return 0, ""
	}
	return n, fmt.Sprintf("%d attempt(s) lack %s; untrusted for cost analysis", n, fieldList(missing))
}

func fieldList(f toolspan.Field) string {
	names := []struct {
		f    toolspan.Field
		name string
	}{
		{toolspan.FieldRunID, "run_id"}, {toolspan.FieldCallID, "call_id"}, {toolspan.FieldAttempt, "attempt"},
		{toolspan.FieldToolName, "tool_name"}, {toolspan.FieldArgsHash, "args_hash"}, {toolspan.FieldResultHash, "result_hash"},
		{toolspan.FieldIdemHash, "idem_hash"}, {toolspan.FieldStatus, "status"}, {toolspan.FieldTokensIn, "tokens_in"},
		{toolspan.FieldTokensOut, "tokens_out"}, {toolspan.FieldStart, "t_start"}, {toolspan.FieldEnd, "t_end"},
		{toolspan.FieldSideEffect, "side_effect"},
	}
	var parts []string
	for _, n := range names {
		if f&n.f != 0 {
			parts = append(parts, n.name)
		}
	}
	return strings.Join(parts, ", ")
}
