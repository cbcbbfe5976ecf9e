package annotate

import (
	"iter"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// LateSpans applies what a span's own attributes give to spans that arrive after their
// kept trace was decided: the isError status remap, and each tool attempt's payload
// hashes (retrystorm.args.hash, retrystorm.result.hash, retrystorm.idem.hash),
// which the markers of the payload's copies carry. Grouping, attempt numbers, statuses,
// classes and findings need the whole trace and are not recomputed. It returns the late
// tool attempts, for redaction.
func LateSpans(spans iter.Seq2[tracespans.Origin, ptrace.Span], x *toolspan.Extractor, opts Options) ([]*grouping.Attempt, Stats) {
	var st Stats
	var tools []*grouping.Attempt
	for o, span := range spans {
		if !x.IsToolSpan(span) {
			continue
		}
		a := &grouping.Attempt{Attempt: x.Extract(span, o.Resource)}
		attrs := span.Attributes()
		putNonEmpty(attrs, stormrecord.AttrArgsHash, a.ArgsHash)
		putNonEmpty(attrs, stormrecord.AttrResultHash, a.ResultHash)
		putNonEmpty(attrs, stormrecord.AttrIdemHash, a.IdemHash)
		if a.Remap != nil {
			remap(a, opts.Redact)
			st.Remapped++
		}
		tools = append(tools, a)
	}
	return tools, st
}
