package annotate

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// LateSpans applies what does not need the whole trace to spans that arrive after their
// kept trace was decided: the isError status remap and redaction of tool spans. Grouping,
// classes and findings need the trace and are not recomputed.
func LateSpans(td ptrace.Traces, x *toolspan.Extractor, opts Options) Stats {
	var st Stats
	for res, span := range tracespans.All(td) {
		if !x.IsToolSpan(span) {
			continue
		}
		a := grouping.Attempt{Attempt: x.Extract(span, res)}
		if a.Remap != nil {
			remap(&a, opts.Redact)
			st.Remapped++
		}
		if opts.Redact {
			for _, k := range opts.RedactKeys {
				if span.Attributes().Remove(k) {
					st.Redacted++
				}
			}
		}
	}
	return st
}
