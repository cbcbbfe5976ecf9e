package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// Attribute sets of timestamps_clamped, by which time of an attempt was clamped.
var (
	clampedStart = metric.WithAttributeSet(attribute.NewSet(attribute.String("field", metadata.AttributeFieldStart)))
	clampedEnd   = metric.WithAttributeSet(attribute.NewSet(attribute.String("field", metadata.AttributeFieldEnd)))
)

// clampedTimestamps counts the attempt times of one decided trace that were past what
// int64 nanoseconds hold and were clamped, not wrapped (toolspan.MaxTimestamp).
func (t *Telemetry) clampedTimestamps(starts, ends int) {
	t.add(t.b.ProcessorRetryStormTimestampsClamped, int64(starts), clampedStart)
	t.add(t.b.ProcessorRetryStormTimestampsClamped, int64(ends), clampedEnd)
}
