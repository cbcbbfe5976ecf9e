package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"context"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/inbound"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// Attribute values of the store's metrics are metadata's Attribute constants, and Cause
// and DropCause (cause.go). The verdict's metrics are verdict.Telemetry's.

// telemetry records the store's metrics with precomputed attribute sets, so recording a
// decision allocates nothing but the storm_calls attributes.
type telemetry struct {
	b *metadata.TelemetryBuilder
	// verdict records what the verdict finds, on the same builder.
	verdict  *verdict.Telemetry
	traces   map[[2]string]metric.AddOption
	late     map[string]metric.AddOption
	evicted  map[string]metric.AddOption
	signalEv map[string]metric.AddOption
	early    map[string]metric.AddOption
	dropped  map[string]metric.AddOption
	// annotation is client_annotations_removed's where.
	annotation map[string]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	signalReasons := make([]string, len(sample.SignalReasons))
	for i, r := range sample.SignalReasons {
		signalReasons[i] = string(r)
	}
	t := &telemetry{
		b: b, verdict: verdict.NewTelemetry(b),
		traces: map[[2]string]metric.AddOption{},
		late: attrOptions("decision", metadata.AttributeLateDecisionKept, metadata.AttributeLateDecisionDropped,
			metadata.AttributeLateDecisionProvisional, metadata.AttributeLateDecisionForgotten),
		evicted:  attrOptions("decision", metadata.AttributeDecisionKept, metadata.AttributeDecisionDropped),
		signalEv: attrOptions("reason", signalReasons...),
		early:    attrOptions("cause", CauseMemoryPressure.String(), CauseTraceBytes.String(), CauseShutdown.String()),
		dropped:  attrOptions("cause", dropCauseNames[:]...),
		annotation: attrOptions("where", metadata.AttributeAnnotationWhereSpan, metadata.AttributeAnnotationWhereEvent, metadata.AttributeAnnotationWhereLink,
			metadata.AttributeAnnotationWhereResource, metadata.AttributeAnnotationWhereScope, metadata.AttributeAnnotationWhereSpanName, metadata.AttributeAnnotationWhereEventName),
	}
	for _, d := range []string{metadata.AttributeDecisionKept, metadata.AttributeDecisionDropped} {
		for _, r := range append(sample.SignalReasons[:], sample.ReasonClean) {
			t.traces[[2]string{d, string(r)}] = metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", d), attribute.String("reason", string(r))))
		}
	}
	t.startAtZero()
	return t, nil
}

// startAtZero exports, at 0, every series of every counter of the store whose attribute values are a
// known, bounded set (README, "Series that start at zero"). The SDK exports a series from
// its first Add; one that first appears with its first event holds that event in its first
// sample, which rate() and increase() never count, and until then a panel has no data
// rather than 0. A counter whose attribute values are not known ahead (a tool name) is an
// openCounter instead.
func (t *telemetry) startAtZero() {
	ctx := context.Background()
	b := t.b
	for _, c := range []metric.Int64Counter{b.ProcessorRetryStormSpansReceived, b.ProcessorRetryStormSpansForwarded} {
		c.Add(ctx, 0)
	}
	for _, c := range []struct {
		counter metric.Int64Counter
		series  []metric.AddOption
	}{
		{b.ProcessorRetryStormSpansDropped, slices.Collect(maps.Values(t.dropped))},
		{b.ProcessorRetryStormEarlyDecisions, slices.Collect(maps.Values(t.early))},
		{b.ProcessorRetryStormTraces, slices.Collect(maps.Values(t.traces))},
		{b.ProcessorRetryStormLateSpans, slices.Collect(maps.Values(t.late))},
		{b.ProcessorRetryStormCacheEvictions, slices.Collect(maps.Values(t.evicted))},
		{b.ProcessorRetryStormSignalEvictions, slices.Collect(maps.Values(t.signalEv))},
	} {
		for _, opt := range c.series {
			c.counter.Add(ctx, 0, opt)
		}
	}
}

func attrOptions(key string, values ...string) map[string]metric.AddOption {
	m := make(map[string]metric.AddOption, len(values))
	for _, v := range values {
		m[v] = metric.WithAttributeSet(attribute.NewSet(attribute.String(key, v)))
	}
	return m
}

func (t *telemetry) add(c metric.Int64Counter, n int64, opt metric.AddOption) {
	if n == 0 {
		return
	}
	if opt == nil {
		c.Add(context.Background(), n)
		return
	}
	c.Add(context.Background(), n, opt)
}

func (t *telemetry) received(n int64) { t.add(t.b.ProcessorRetryStormSpansReceived, n, nil) }
func (t *telemetry) forwarded(n int64) {
	t.add(t.b.ProcessorRetryStormSpansForwarded, n, nil)
}

// cacheEvicted counts a decision the decision cache forgot to make room.
func (t *telemetry) cacheEvicted(decision string) {
	t.add(t.b.ProcessorRetryStormCacheEvictions, 1, t.evicted[decision])
}

// signalEvicted counts a kept signal decision the decision cache forgot, by its reason.
func (t *telemetry) signalEvicted(reason sample.Reason) {
	t.add(t.b.ProcessorRetryStormSignalEvictions, 1, t.signalEv[string(reason)])
}

func (t *telemetry) droppedSpans(cause DropCause, n int64) {
	t.add(t.b.ProcessorRetryStormSpansDropped, n, t.dropped[cause.String()])
}

func (t *telemetry) lateSpans(decision string, n int64) {
	t.add(t.b.ProcessorRetryStormLateSpans, n, t.late[decision])
}

// clientAnnotations counts the client annotations taken out of one request.
func (t *telemetry) clientAnnotations(c inbound.Counts) {
	m := t.b.ProcessorRetryStormClientAnnotations
	t.add(m, c.Span, t.annotation[metadata.AttributeAnnotationWhereSpan])
	t.add(m, c.Event, t.annotation[metadata.AttributeAnnotationWhereEvent])
	t.add(m, c.Link, t.annotation[metadata.AttributeAnnotationWhereLink])
	t.add(m, c.Resource, t.annotation[metadata.AttributeAnnotationWhereResource])
	t.add(m, c.Scope, t.annotation[metadata.AttributeAnnotationWhereScope])
	t.add(m, c.SpanName, t.annotation[metadata.AttributeAnnotationWhereSpanName])
	t.add(m, c.EventName, t.annotation[metadata.AttributeAnnotationWhereEventName])
}

// decided records one decision; first says it is its trace's first (not that of the rest
// of a provisionally decided trace), which alone counts the trace.
func (t *telemetry) decided(d sample.Decision, cause Cause, latency time.Duration, first bool) {
	outcome := metadata.AttributeDecisionDropped
	if d.Keep {
		outcome = metadata.AttributeDecisionKept
	}
	if first {
		t.add(t.b.ProcessorRetryStormTraces, 1, t.traces[[2]string{outcome, string(d.Reason)}])
	}
	if opt, early := t.early[cause.String()]; early {
		t.add(t.b.ProcessorRetryStormEarlyDecisions, 1, opt)
	}
	t.b.ProcessorRetryStormDecisionLatency.Record(context.Background(), latency.Seconds())
}
