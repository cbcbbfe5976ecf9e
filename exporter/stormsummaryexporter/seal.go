package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"context"

	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// sealedTraces is the exporter the collector sees: the records on spans that no retry_storm
// processor of this collector sealed are taken out of each batch before it enters the
// sending queue. The seal's key lives as long as the process, so a batch is checked once,
// on its way in: a persistent queue replays after a restart what was checked before it.
type sealedTraces struct {
	exporter.Traces
	summaries *summaryExporter
}

func (s sealedTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return s.Traces.ConsumeTraces(ctx, s.summaries.admit(ctx, td))
}

// admit returns td, or a copy of it without the records no seal vouches for (td may be
// shared with other consumers: it is not changed). Each such record is counted.
func (e *summaryExporter) admit(ctx context.Context, td ptrace.Traces) ptrace.Traces {
	if e.cfg.AcceptUnsealed {
		return td
	}
	var sealer *stormrecord.Sealer
	unsealed := func(span ptrace.Span) bool {
		attrs := span.Attributes()
		_, call := attrs.Get(stormrecord.AttrCallSummary)
		_, finding := attrs.Get(stormrecord.AttrFindingSummary)
		if !call && !finding {
			return false
		}
		if sealer == nil {
			sealer = stormrecord.NewSealer()
		}
		return sealer.Check(span) == stormrecord.Unsealed
	}
	found := false
	for _, span := range tracespans.All(td) {
		if unsealed(span) {
			found = true
			break
		}
	}
	if !found {
		return td
	}
	out := ptrace.NewTraces()
	td.CopyTo(out)
	removed := 0
	for _, span := range tracespans.All(out) {
		if unsealed(span) {
			attrs := span.Attributes()
			for _, k := range []string{stormrecord.AttrCallSummary, stormrecord.AttrFindingSummary} {
				if attrs.Remove(k) {
					removed++
				}
			}
		}
	}
	e.telemetry.ExporterStormSummaryRecordsUnsealed.Add(ctx, int64(removed))
	e.warnUnsealed.Do(func() {
		e.logger.Warn("skipping records that no retry_storm processor of this collector sealed: "+
			"put storm_summary behind retry_storm in the same collector, or set accept_unsealed for a trusted upstream",
			zap.Int("summary.unsealed", removed))
	})
	return out
}
