package stormsconnector // import "github.com/retrystorm/retrystorm/connector/stormsconnector"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/pdata/ptrace"
	otelmetric "go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/connector/stormsconnector/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// sealCheck lets through the annotations a retry_storm processor of this collector sealed
// (or every span, with accept_unsealed), and counts the spans it keeps out.
type sealCheck struct {
	accept  bool
	sealer  *stormrecord.Sealer // used under the metrics direction's lock
	counter otelmetric.Int64Counter
	warn    sync.Once
}

func newSealCheck(set connector.Settings, accept bool) (*sealCheck, error) {
	c, err := set.MeterProvider.Meter(metadata.ScopeName).Int64Counter(metadata.AnnotationsUnsealed,
		otelmetric.WithUnit("{span}"),
		otelmetric.WithDescription("Spans whose retrystorm annotations no retry_storm processor of this collector sealed, skipped (accept_unsealed is off)."))
	if err != nil {
		return nil, err
	}
	return &sealCheck{accept: accept, sealer: stormrecord.NewSealer(), counter: c}, nil
}

// admits reports whether span's annotations may be read: it carries none, they are
// sealed, or unsealed ones are accepted. Callers hold the metrics direction's lock.
func (c *sealCheck) admits(span ptrace.Span) bool {
	return c.accept || c.sealer.Check(span) != stormrecord.Unsealed
}

// forCall is a check with a Sealer of its own, for a direction that holds no lock.
func (c *sealCheck) forCall() *sealCheck {
	if c.accept {
		return c
	}
	return &sealCheck{sealer: stormrecord.NewSealer()}
}

// skipped counts n spans kept out, and says so in the log the first time.
func (c *sealCheck) skipped(ctx context.Context, logger *zap.Logger, n int) {
	if n == 0 {
		return
	}
	c.counter.Add(ctx, int64(n))
	c.warn.Do(func() {
		logger.Warn("skipping retrystorm annotations that no retry_storm processor of this collector sealed: "+
			"put the storms connector behind retry_storm in the same collector, or set accept_unsealed for a trusted upstream",
			zap.Int("storms.unsealed_spans", n))
	})
}
