package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/annotate"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// redactKept removes the tool payloads of a kept, annotated trace from all its spans and
// returns their fingerprints for its late spans, without the index the scan built: the
// decision cache keeps them. Only kept traces pay for it. known are payloads the trace's
// spans are scrubbed of besides its own: those of the first part of a provisionally kept
// trace, for its rest (nil: none).
func (v *Verdict) redactKept(tr *analysis.Trace, set *spanset.Set, known *redact.Values) *redact.Values {
	b := v.redactor.Values()
	for _, n := range tr.ToolSpans {
		b.Add(tr.Tree.Nodes[n].Span)
		if keys := tr.PayloadKeys[n]; len(keys) > 0 {
			b.AddKeys(tr.Tree.Nodes[n].Span, keys)
		}
	}
	for _, p := range tr.ModelPayloads {
		b.AddModelPayload(p)
	}
	b.Follow(followedOf(tr))
	v.hashedPayloads(b, tr)
	for _, tool := range tr.Tools {
		b.Exclude(tool)
	}
	var st redact.Stats
	vals := b.Done(&st)
	if known != nil {
		vals = known.Merge(vals, &st)
		v.redactor.MarkAsHashed(known)
	}
	held := func(n int32) bool { return tr.Held != nil && tr.Held[n] } // redacted with the rest
	for _, n := range tr.ToolSpans {
		if held(n) {
			continue
		}
		v.redactor.ToolSpan(tr.Tree.Nodes[n].Span, &st)
		if keys := tr.PayloadKeys[n]; len(keys) > 0 {
			v.redactor.DeleteKeys(tr.Tree.Nodes[n].Span, keys, &st)
		}
	}
	for n, keys := range tr.MessageKeys {
		if !held(n) {
			v.redactor.Messages(tr.Tree.Nodes[n].Span, keys, &st)
		}
	}
	v.redactSet(set, vals, &st)
	st.Scrubbed += annotate.ScrubRecords(tr, vals.Scrub)
	v.shared.Tel.redacted(st)
	return vals.Unindexed()
}

// followedOf is where following the model found tr's payloads, for its late spans: the
// attributes it read tool calls and responses from, those that held the payload of the
// tool spans it found, and the trace's tools.
func followedOf(tr *analysis.Trace) *redact.Followed {
	if len(tr.MessageKeys) == 0 && len(tr.PayloadKeys) == 0 {
		return nil
	}
	f := &redact.Followed{Tools: tr.Tools}
	for _, keys := range tr.MessageKeys {
		for _, k := range keys {
			if !slices.Contains(f.MessageKeys, k) {
				f.MessageKeys = append(f.MessageKeys, k)
			}
		}
	}
	for _, keys := range tr.PayloadKeys {
		for _, k := range keys {
			if !slices.Contains(f.PayloadKeys, k) {
				f.PayloadKeys = append(f.PayloadKeys, k)
			}
		}
	}
	return f
}

// hashedPayloads hands b the payload texts the analysis hashed with their hashes, so the
// markers of their copies are not hashed again.
func (v *Verdict) hashedPayloads(b redact.ValueBuilder, tr *analysis.Trace) {
	x := v.analyzer.Extractor()
	for _, u := range slices.Concat(tr.Units, tr.HeldUnits) {
		for _, c := range u.Calls {
			for _, a := range c.Attempts {
				args, result := x.HashedTexts(&a.Attempt)
				b.Hashed(args, a.ArgsHash)
				b.Hashed(result, a.ResultHash)
			}
		}
	}
}

// redactLate redacts late spans of a kept trace: of the payloads the trace's decision
// remembered and those of tools, the tool attempts among the late ones (annotate.LateSpans
// read them). Copies of a late attempt's payload are marked with its hashes, as a kept
// trace's are. It returns every payload fingerprint known for the trace now, for the
// decision cache: known itself when no late tool span brought any, and either way without
// the index the scan built.
func (v *Verdict) redactLate(set *spanset.Set, tools []*grouping.Attempt, known *redact.Values) *redact.Values {
	b := v.redactor.Values()
	x := v.analyzer.Extractor()
	for _, a := range tools {
		b.Add(a.Span)
		b.Exclude(a.ToolName)
		args, result := x.HashedTexts(&a.Attempt)
		b.Hashed(args, a.ArgsHash)
		b.Hashed(result, a.ResultHash)
	}
	// Late tool spans following the model found in the trace's first part: spans named
	// for its tools that carry the keys its found spans held their payload under.
	followed := known.Followed()
	var found []ptrace.Span
	if followed != nil && len(followed.PayloadKeys) > 0 {
		for _, span := range set.All() {
			if followedToolSpan(span, followed) {
				b.AddKeys(span, followed.PayloadKeys)
				found = append(found, span)
			}
		}
	}
	v.redactor.MarkAsHashed(known)
	var st redact.Stats
	vals := known
	if len(tools) > 0 || len(found) > 0 {
		vals = known.Merge(b.Done(&st), &st)
	}
	for _, a := range tools {
		v.redactor.ToolSpan(a.Span, &st)
	}
	for _, span := range found {
		v.redactor.DeleteKeys(span, followed.PayloadKeys, &st)
	}
	for _, span := range set.All() {
		if keys := v.analyzer.MessageKeys(span); len(keys) > 0 {
			v.redactor.Messages(span, keys, &st)
		}
	}
	v.redactSet(set, vals, &st)
	v.shared.Tel.redacted(st)
	return vals.Unindexed()
}

// followedToolSpan reports a late span named for one of the trace's tools that carries a
// key the tool spans following found held their payload under.
func followedToolSpan(span ptrace.Span, f *redact.Followed) bool {
	named := false
	for _, t := range f.Tools {
		if t != "" && strings.Contains(span.Name(), t) {
			named = true
			break
		}
	}
	if !named {
		return false
	}
	for _, k := range f.PayloadKeys {
		if _, ok := span.Attributes().Get(k); ok {
			return true
		}
	}
	return false
}

// redactSet redacts every span of set and the resources and scopes they are forwarded
// under. Those are shared with other traces of the same request (on any shard), so one
// that holds a payload is copied for this trace before it is scrubbed, never changed in
// place.
func (v *Verdict) redactSet(set *spanset.Set, vals *redact.Values, st *redact.Stats) {
	for _, span := range set.All() {
		v.redactor.Span(span, vals, st)
	}
	if vals.Len() == 0 {
		return
	}
	copies := map[*spanset.Origin]*spanset.Origin{}
	resCopies := map[*spanset.Resource]*spanset.Resource{}
	for i := range set.Parts {
		o := set.Parts[i].Origin
		if c, ok := copies[o]; ok {
			set.Parts[i].Origin = c
			continue
		}
		res, seen := resCopies[o.Res]
		if !seen {
			res = o.Res
			if redact.Holds(o.Res.RS.Resource().Attributes(), vals) {
				res = &spanset.Resource{RS: spanset.CopyResource(o.Res), Size: o.Res.Size}
				st.Scrubbed += v.redactor.Map(res.RS.Resource().Attributes(), vals)
			}
			resCopies[o.Res] = res
		}
		c := o
		if scopeHolds := redact.ScopeHolds(o.SS.Scope(), vals); scopeHolds || res != o.Res {
			c = &spanset.Origin{Res: res, SS: spanset.CopyScope(o), Size: o.Size}
			if scopeHolds {
				st.Scrubbed += v.redactor.Scope(c.SS.Scope(), vals)
			}
		}
		copies[o] = c
		set.Parts[i].Origin = c
	}
}
