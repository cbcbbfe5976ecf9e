package metadata // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
)

// Metric names of the processor's internal telemetry, the keys of metadata.yaml's
// telemetry.metrics with the collector's otelcol_ prefix.
const (
	prefix                   = "otelcol_processor_retry_storm_"
	MetricSpansReceived      = prefix + "spans_received"
	MetricSpansForwarded     = prefix + "spans_forwarded"
	MetricSpansDropped       = prefix + "spans_dropped"
	MetricToolAttempts       = prefix + "tool_attempts"
	MetricIncompleteAttempts = prefix + "incomplete_attempts"
	MetricTimestampsClamped  = prefix + "timestamps_clamped"
	MetricCalls              = prefix + "calls"
	MetricDegradedCalls      = prefix + "degraded_calls"
	MetricStormCalls         = prefix + "storm_calls"
	MetricStatusFlipCalls    = prefix + "status_flip_calls"
	MetricFindings           = prefix + "findings"
	MetricStatusRemapped     = prefix + "status_remapped"
	MetricTraces             = prefix + "traces"
	MetricLateSpans          = prefix + "late_spans"
	MetricEarlyDecisions     = prefix + "early_decisions"
	MetricLateSignals        = prefix + "late_signals"
	MetricBufferedBytes      = prefix + "buffered_bytes"
	MetricBufferedTraces     = prefix + "buffered_traces"
	MetricBufferedSpans      = prefix + "buffered_spans"
	MetricDecisionLatency    = prefix + "decision_latency"
	MetricCacheEvictions     = prefix + "decision_cache_evictions"
	MetricSignalEvictions    = prefix + "signal_decisions_evicted"
	MetricUnseenToolCalls    = prefix + "unseen_tool_calls"
	MetricRedactions         = prefix + "redactions"
	MetricValuesNotHunted    = prefix + "payload_values_not_hunted"
	MetricStaleSuspects      = prefix + "stale_cache_suspects"
	MetricLateFindings       = prefix + "late_findings"
	MetricClientAnnotations  = prefix + "client_annotations_removed"
)

// metricStability ends every description, as mdatagen appends a metric's stability.
const metricStability = " [Alpha]"

// decisionLatencyBuckets are seconds from a trace's first span to its decision.
var decisionLatencyBuckets = []float64{0.01, 0.1, 0.5, 1, 2, 3, 5, 10, 20, 30, 45, 60, 120, 300, 600}

// Meter returns the processor's meter from the component's MeterProvider.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds the processor's instruments.
type TelemetryBuilder struct {
	meter         metric.Meter
	mu            sync.Mutex
	registrations []metric.Registration

	ProcessorRetryStormSpansReceived      metric.Int64Counter
	ProcessorRetryStormSpansForwarded     metric.Int64Counter
	ProcessorRetryStormSpansDropped       metric.Int64Counter
	ProcessorRetryStormToolAttempts       metric.Int64Counter
	ProcessorRetryStormIncompleteAttempts metric.Int64Counter
	ProcessorRetryStormTimestampsClamped  metric.Int64Counter
	ProcessorRetryStormCalls              metric.Int64Counter
	ProcessorRetryStormDegradedCalls      metric.Int64Counter
	ProcessorRetryStormStormCalls         metric.Int64ObservableCounter
	ProcessorRetryStormStatusFlipCalls    metric.Int64Counter
	ProcessorRetryStormFindings           metric.Int64Counter
	ProcessorRetryStormStatusRemapped     metric.Int64Counter
	ProcessorRetryStormTraces             metric.Int64Counter
	ProcessorRetryStormLateSpans          metric.Int64Counter
	ProcessorRetryStormEarlyDecisions     metric.Int64Counter
	ProcessorRetryStormLateSignals        metric.Int64Counter
	ProcessorRetryStormCacheEvictions     metric.Int64Counter
	ProcessorRetryStormSignalEvictions    metric.Int64Counter
	ProcessorRetryStormUnseenToolCalls    metric.Int64ObservableCounter
	ProcessorRetryStormRedactions         metric.Int64Counter
	ProcessorRetryStormValuesNotHunted    metric.Int64Counter
	ProcessorRetryStormStaleSuspects      metric.Int64Counter
	ProcessorRetryStormLateFindings       metric.Int64Counter
	ProcessorRetryStormClientAnnotations  metric.Int64Counter
	ProcessorRetryStormBufferedBytes      metric.Int64ObservableGauge
	ProcessorRetryStormBufferedTraces     metric.Int64ObservableGauge
	ProcessorRetryStormBufferedSpans      metric.Int64ObservableGauge
	ProcessorRetryStormDecisionLatency    metric.Float64Histogram
}

type counterSpec struct {
	dst         *metric.Int64Counter
	name, unit  string
	description string
}

// NewTelemetryBuilder creates every instrument of the processor on the component's meter.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	b := &TelemetryBuilder{meter: Meter(settings)}
	var errs error
	for _, c := range b.counters() {
		var err error
		*c.dst, err = b.meter.Int64Counter(c.name, metric.WithDescription(c.description+metricStability), metric.WithUnit(c.unit))
		errs = errors.Join(errs, err)
	}
	var err error
	b.ProcessorRetryStormStormCalls, err = b.meter.Int64ObservableCounter(MetricStormCalls,
		metric.WithDescription("Retry storms, by class and tool (tool names bounded, overflow _other)."+metricStability), metric.WithUnit("{call}"))
	errs = errors.Join(errs, err)
	b.ProcessorRetryStormUnseenToolCalls, err = b.meter.Int64ObservableCounter(MetricUnseenToolCalls,
		metric.WithDescription("Tool calls in decided traces that retry_storm could not see, by reason (unanswered, arguments_unread, result_unread) and instrumentation scope (scope names bounded, overflow _other)."+metricStability), metric.WithUnit("{call}"))
	errs = errors.Join(errs, err)
	b.ProcessorRetryStormBufferedBytes, err = b.meter.Int64ObservableGauge(MetricBufferedBytes,
		metric.WithDescription("OTLP-encoded bytes of spans held awaiting a decision."+metricStability), metric.WithUnit("By"))
	errs = errors.Join(errs, err)
	b.ProcessorRetryStormBufferedTraces, err = b.meter.Int64ObservableGauge(MetricBufferedTraces,
		metric.WithDescription("Traces held awaiting a decision."+metricStability), metric.WithUnit("{trace}"))
	errs = errors.Join(errs, err)
	b.ProcessorRetryStormBufferedSpans, err = b.meter.Int64ObservableGauge(MetricBufferedSpans,
		metric.WithDescription("Spans held awaiting a decision."+metricStability), metric.WithUnit("{span}"))
	errs = errors.Join(errs, err)
	b.ProcessorRetryStormDecisionLatency, err = b.meter.Float64Histogram(MetricDecisionLatency,
		metric.WithDescription("Time from a trace's first span to its decision."+metricStability), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(decisionLatencyBuckets...))
	errs = errors.Join(errs, err)
	return b, errs
}

func (b *TelemetryBuilder) counters() []counterSpec {
	return []counterSpec{
		{&b.ProcessorRetryStormSpansReceived, MetricSpansReceived, "{span}", "Spans received by the processor."},
		{&b.ProcessorRetryStormSpansForwarded, MetricSpansForwarded, "{span}", "Spans passed to the next consumer, late spans of kept traces included."},
		{&b.ProcessorRetryStormSpansDropped, MetricSpansDropped, "{span}", "Spans not forwarded, by cause (sampled_out, late, next_consumer_error, shutdown, unpack_error, forgotten)."},
		{&b.ProcessorRetryStormToolAttempts, MetricToolAttempts, "{attempt}", "Tool-call attempts in decided traces."},
		{&b.ProcessorRetryStormIncompleteAttempts, MetricIncompleteAttempts, "{attempt}", "Attempts missing a required or carried field."},
		{&b.ProcessorRetryStormTimestampsClamped, MetricTimestampsClamped, "{timestamp}", "Tool-attempt start or end times past 2262-04-11 (int64 nanoseconds) clamped to that instant, by field (start, end)."},
		{&b.ProcessorRetryStormCalls, MetricCalls, "{call}", "Logical tool calls in decided traces."},
		{&b.ProcessorRetryStormDegradedCalls, MetricDegradedCalls, "{call}", "Logical calls grouped without a call id (parent, tool name, args hash)."},
		{&b.ProcessorRetryStormStatusFlipCalls, MetricStatusFlipCalls, "{call}", "Calls whose attempts had more than one distinct status."},
		{&b.ProcessorRetryStormFindings, MetricFindings, "{finding}", "Divergence findings, by kind."},
		{&b.ProcessorRetryStormStatusRemapped, MetricStatusRemapped, "{span}", "Kept spans whose status was remapped to ERROR from an isError result or the tool's own failure report."},
		{&b.ProcessorRetryStormTraces, MetricTraces, "{trace}", "Traces decided, by decision (kept, dropped) and reason; a trace decided in parts (provisional decisions) is counted once, at its first decision."},
		{&b.ProcessorRetryStormLateSpans, MetricLateSpans, "{span}", "Spans that arrived after their trace's decision, by decision (kept, dropped, provisional, forgotten)."},
		{&b.ProcessorRetryStormEarlyDecisions, MetricEarlyDecisions, "{trace}", "Traces decided before their deadline, by cause (memory_pressure, trace_bytes, shutdown)."},
		{&b.ProcessorRetryStormLateSignals, MetricLateSignals, "{trace}", "Rests of provisionally decided traces that brought a signal and were kept, by cause of the provisional decision (memory_pressure, trace_bytes) and reason."},
		{&b.ProcessorRetryStormRedactions, MetricRedactions, "{value}", "Tool payloads removed from kept spans, by where (tool_span, idempotency_key, message, event, scrubbed, unparseable, configured)."},
		{&b.ProcessorRetryStormValuesNotHunted, MetricValuesNotHunted, "{value}", "Distinct tool payload values of kept traces that scrubbing did not hunt because their trace (or batch of late spans) held more than redaction.max_hunted_values; a copy of one outside tool spans and message structures is forwarded as it came."},
		{&b.ProcessorRetryStormStaleSuspects, MetricStaleSuspects, "{attempt}", "Stale-cache suspects whose result no earlier trace had shown when their trace was decided, by outcome (held, resolved, expired, evicted)."},
		{&b.ProcessorRetryStormLateFindings, MetricLateFindings, "{finding}", "Findings found after their trace was decided, by outcome (forwarded, trace_dropped, next_consumer_error, shutdown)."},
		{&b.ProcessorRetryStormClientAnnotations, MetricClientAnnotations, "{annotation}", "Attributes under retrystorm. that arrived with spans and were removed before anything read them (but the configuration's input attributes), and span and event names under it that were renamed, by where (span, event, link, resource, scope, span_name, event_name)."},
		{&b.ProcessorRetryStormCacheEvictions, MetricCacheEvictions, "{trace}", "Trace decisions forgotten to make room in the decision cache, by decision (kept, dropped); a later span of a forgotten kept trace is dropped, of a forgotten dropped trace starts it over."},
		{&b.ProcessorRetryStormSignalEvictions, MetricSignalEvictions, "{trace}", "Kept decisions of traces with a signal forgotten by the decision cache, which forgets clean ones first, by reason; each is logged, and later spans of its trace are dropped."},
	}
}

// RegisterBufferedCallback registers cb to observe the three buffered gauges at collection.
func (b *TelemetryBuilder) RegisterBufferedCallback(cb func() (bytes, traces, spans int64)) error {
	return b.register(func(_ context.Context, o metric.Observer) error {
		bytes, traces, spans := cb()
		o.ObserveInt64(b.ProcessorRetryStormBufferedBytes, bytes)
		o.ObserveInt64(b.ProcessorRetryStormBufferedTraces, traces)
		o.ObserveInt64(b.ProcessorRetryStormBufferedSpans, spans)
		return nil
	}, b.ProcessorRetryStormBufferedBytes, b.ProcessorRetryStormBufferedTraces, b.ProcessorRetryStormBufferedSpans)
}

// RegisterStormCallsCallback registers cb to observe storm_calls at collection.
func (b *TelemetryBuilder) RegisterStormCallsCallback(cb metric.Int64Callback) error {
	return b.registerOne(b.ProcessorRetryStormStormCalls, cb)
}

// RegisterUnseenToolCallsCallback registers cb to observe unseen_tool_calls at collection.
func (b *TelemetryBuilder) RegisterUnseenToolCallsCallback(cb metric.Int64Callback) error {
	return b.registerOne(b.ProcessorRetryStormUnseenToolCalls, cb)
}

// registerOne registers cb to observe the one instrument inst.
func (b *TelemetryBuilder) registerOne(inst metric.Int64Observable, cb metric.Int64Callback) error {
	return b.register(func(ctx context.Context, o metric.Observer) error {
		return cb(ctx, &observerInt64{inst: inst, obs: o})
	}, inst)
}

// register registers f for insts and keeps the registration for Shutdown.
func (b *TelemetryBuilder) register(f metric.Callback, insts ...metric.Observable) error {
	reg, err := b.meter.RegisterCallback(f, insts...)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.registrations = append(b.registrations, reg)
	return nil
}

// observerInt64 observes one instrument through a multi-instrument callback's observer.
type observerInt64 struct {
	embedded.Int64Observer
	inst metric.Int64Observable
	obs  metric.Observer
}

func (o *observerInt64) Observe(value int64, opts ...metric.ObserveOption) {
	o.obs.ObserveInt64(o.inst, value, opts...)
}

// Shutdown unregisters every callback.
func (b *TelemetryBuilder) Shutdown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, reg := range b.registrations {
		_ = reg.Unregister()
	}
	b.registrations = nil
}
