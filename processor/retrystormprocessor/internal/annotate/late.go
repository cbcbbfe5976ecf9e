package annotate

import (
	"iter"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// LateSpans applies what does not need the whole trace to spans that arrive after their
// kept trace was decided: the isError status remap. Grouping, classes and findings need
// the trace and are not recomputed.
func LateSpans(spans iter.Seq2[pcommon.Resource, ptrace.Span], x *toolspan.Extractor, opts Options) Stats {
	var st Stats
	for res, span := range spans {
		if !x.IsToolSpan(span) {
			continue
		}
		a := grouping.Attempt{Attempt: x.Extract(span, res)}
		if a.Remap != nil {
			remap(&a, opts.Redact)
			st.Remapped++
		}
	}
	return st
}
