package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrystorm/retrystorm/internal/zerostart"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decision"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/inbound"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
)

// Attribute values of the processor's metrics are metadata's Attribute constants, and
// Cause and DropCause (cause.go).
const (
	// maxToolNames bounds the tool attribute; later names count as toolOther.
	maxToolNames = 100
	toolOther    = "_other"
	toolUnknown  = "_unknown"
)

// telemetry records the processor's metrics with precomputed attribute sets, so recording a
// decision allocates nothing but the storm_calls attributes.
type telemetry struct {
	b          *metadata.TelemetryBuilder
	tools      toolNames
	stormCalls *openCounter
	// scopes bounds unseen_tool_calls' scope attribute as tools bounds storm_calls' tool.
	scopes      toolNames
	unseenCalls *openCounter
	traces      map[[2]string]metric.AddOption
	findings    map[string]metric.AddOption
	late        map[string]metric.AddOption
	evicted     map[string]metric.AddOption
	signalEv    map[string]metric.AddOption
	early       map[string]metric.AddOption
	signals     map[[2]string]metric.AddOption
	dropped     map[string]metric.AddOption
	where       map[string]metric.AddOption
	suspect     map[string]metric.AddOption
	lateFind    map[string]metric.AddOption
	// annotation is client_annotations_removed's where.
	annotation map[string]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	signalReasons := make([]string, len(decision.SignalReasons))
	for i, r := range decision.SignalReasons {
		signalReasons[i] = string(r)
	}
	t := &telemetry{
		b: b, tools: toolNames{limit: maxToolNames}, stormCalls: newOpenCounter(),
		scopes: toolNames{limit: maxToolNames}, unseenCalls: newOpenCounter(),
		traces:   map[[2]string]metric.AddOption{},
		findings: attrOptions("kind", findings.Kinds...),
		late: attrOptions("decision", metadata.AttributeLateDecisionKept, metadata.AttributeLateDecisionDropped,
			metadata.AttributeLateDecisionProvisional, metadata.AttributeLateDecisionForgotten),
		evicted:  attrOptions("decision", metadata.AttributeDecisionKept, metadata.AttributeDecisionDropped),
		signalEv: attrOptions("reason", signalReasons...),
		early:    attrOptions("cause", CauseMemoryPressure.String(), CauseTraceBytes.String(), CauseShutdown.String()),
		signals:  map[[2]string]metric.AddOption{},
		dropped:  attrOptions("cause", dropCauseNames[:]...),
		where:    attrOptions("where", redactedWhere...),
		suspect:  attrOptions("outcome", metadata.AttributeSuspectOutcomeHeld, metadata.AttributeSuspectOutcomeResolved, metadata.AttributeSuspectOutcomeExpired, metadata.AttributeSuspectOutcomeEvicted),
		lateFind: attrOptions("outcome", metadata.AttributeLateFindingOutcomeForwarded, metadata.AttributeLateFindingOutcomeTraceDropped, metadata.AttributeLateFindingOutcomeNextConsumerError, metadata.AttributeLateFindingOutcomeShutdown),
		annotation: attrOptions("where", metadata.AttributeAnnotationWhereSpan, metadata.AttributeAnnotationWhereEvent, metadata.AttributeAnnotationWhereLink,
			metadata.AttributeAnnotationWhereResource, metadata.AttributeAnnotationWhereScope, metadata.AttributeAnnotationWhereSpanName, metadata.AttributeAnnotationWhereEventName),
	}
	for _, d := range []string{metadata.AttributeDecisionKept, metadata.AttributeDecisionDropped} {
		for _, r := range append(decision.SignalReasons[:], decision.ReasonClean) {
			t.traces[[2]string{d, string(r)}] = metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", d), attribute.String("reason", string(r))))
		}
	}
	for _, c := range []Cause{CauseMemoryPressure, CauseTraceBytes} {
		for _, r := range decision.SignalReasons {
			t.signals[[2]string{c.String(), string(r)}] = metric.WithAttributeSet(attribute.NewSet(attribute.String("cause", c.String()), attribute.String("reason", string(r))))
		}
	}
	t.startAtZero()
	return t, nil
}

// startAtZero exports, at 0, every series of every counter whose attribute values are a
// known, bounded set (README, "Series that start at zero"). The SDK exports a series from
// its first Add; one that first appears with its first event holds that event in its first
// sample, which rate() and increase() never count, and until then a panel has no data
// rather than 0. A counter whose attribute values are not known ahead (a tool name) is an
// openCounter instead.
func (t *telemetry) startAtZero() {
	ctx := context.Background()
	b := t.b
	for _, c := range []metric.Int64Counter{b.ProcessorRetryStormSpansReceived, b.ProcessorRetryStormSpansForwarded,
		b.ProcessorRetryStormToolAttempts, b.ProcessorRetryStormIncompleteAttempts, b.ProcessorRetryStormCalls,
		b.ProcessorRetryStormDegradedCalls, b.ProcessorRetryStormStatusFlipCalls, b.ProcessorRetryStormStatusRemapped,
		b.ProcessorRetryStormValuesNotHunted} {
		c.Add(ctx, 0)
	}
	for _, c := range []struct {
		counter metric.Int64Counter
		series  []metric.AddOption
	}{
		{b.ProcessorRetryStormSpansDropped, slices.Collect(maps.Values(t.dropped))},
		{b.ProcessorRetryStormEarlyDecisions, slices.Collect(maps.Values(t.early))},
		{b.ProcessorRetryStormTraces, slices.Collect(maps.Values(t.traces))},
		{b.ProcessorRetryStormFindings, slices.Collect(maps.Values(t.findings))},
		{b.ProcessorRetryStormLateSpans, slices.Collect(maps.Values(t.late))},
		{b.ProcessorRetryStormLateSignals, slices.Collect(maps.Values(t.signals))},
		{b.ProcessorRetryStormCacheEvictions, slices.Collect(maps.Values(t.evicted))},
		{b.ProcessorRetryStormSignalEvictions, slices.Collect(maps.Values(t.signalEv))},
		{b.ProcessorRetryStormRedactions, slices.Collect(maps.Values(t.where))},
		{b.ProcessorRetryStormStaleSuspects, slices.Collect(maps.Values(t.suspect))},
		{b.ProcessorRetryStormLateFindings, slices.Collect(maps.Values(t.lateFind))},
		{b.ProcessorRetryStormTimestampsClamped, []metric.AddOption{clampedStart, clampedEnd}},
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
func (t *telemetry) signalEvicted(reason decision.Reason) {
	t.add(t.b.ProcessorRetryStormSignalEvictions, 1, t.signalEv[string(reason)])
}

func (t *telemetry) droppedSpans(cause DropCause, n int64) {
	t.add(t.b.ProcessorRetryStormSpansDropped, n, t.dropped[cause.String()])
}

func (t *telemetry) lateSpans(decision string, n int64) {
	t.add(t.b.ProcessorRetryStormLateSpans, n, t.late[decision])
}

// lateSignal counts the rest of a provisionally decided trace that brought a signal: the
// cause of the provisional decision and the signal's sampling reason.
func (t *telemetry) lateSignal(cause Cause, reason decision.Reason) {
	t.add(t.b.ProcessorRetryStormLateSignals, 1, t.signals[[2]string{cause.String(), string(reason)}])
}

var redactedWhere = []string{metadata.AttributeWhereToolSpan, metadata.AttributeWhereIdempotencyKey, metadata.AttributeWhereMessage, metadata.AttributeWhereEvent,
	metadata.AttributeWhereScrubbed, metadata.AttributeWhereUnparseable, metadata.AttributeWhereConfigured}

// redacted counts what redaction removed from one kept trace (or its late spans), and the
// payload values it did not hunt.
func (t *telemetry) redacted(st redact.Stats) {
	c := t.b.ProcessorRetryStormRedactions
	t.add(c, int64(st.ToolSpan), t.where[metadata.AttributeWhereToolSpan])
	t.add(c, int64(st.IdempotencyKey), t.where[metadata.AttributeWhereIdempotencyKey])
	t.add(c, int64(st.Message), t.where[metadata.AttributeWhereMessage])
	t.add(c, int64(st.Event), t.where[metadata.AttributeWhereEvent])
	t.add(c, int64(st.Scrubbed), t.where[metadata.AttributeWhereScrubbed])
	t.add(c, int64(st.Unparseable), t.where[metadata.AttributeWhereUnparseable])
	t.add(c, int64(st.Configured), t.where[metadata.AttributeWhereConfigured])
	t.add(t.b.ProcessorRetryStormValuesNotHunted, int64(st.NotHunted), nil)
}

// suspects counts stale-cache suspects by outcome (stale.go).
func (t *telemetry) suspects(outcome string, n int) {
	t.add(t.b.ProcessorRetryStormStaleSuspects, int64(n), t.suspect[outcome])
}

// lateFindings counts findings found after their trace was decided, by outcome.
func (t *telemetry) lateFindings(outcome string, n int64) {
	t.add(t.b.ProcessorRetryStormLateFindings, n, t.lateFind[outcome])
}

// finding counts one finding found outside an analysis (a late one).
func (t *telemetry) finding(kind string) {
	t.add(t.b.ProcessorRetryStormFindings, 1, t.findings[kind])
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

func (t *telemetry) remapped(n int) { t.add(t.b.ProcessorRetryStormStatusRemapped, int64(n), nil) }

// analysed records what the analysis of one decided trace found.
func (t *telemetry) analysed(tr *analysis.Trace) {
	t.add(t.b.ProcessorRetryStormToolAttempts, int64(tr.ToolAttempts), nil)
	t.add(t.b.ProcessorRetryStormIncompleteAttempts, int64(tr.IncompleteAttempts), nil)
	t.add(t.b.ProcessorRetryStormCalls, int64(tr.Calls), nil)
	t.add(t.b.ProcessorRetryStormDegradedCalls, int64(tr.DegradedCalls), nil)
	t.clampedTimestamps(tr.ClampedStarts, tr.ClampedEnds)
	for _, u := range tr.Units {
		if u.StatusFlip {
			t.add(t.b.ProcessorRetryStormStatusFlipCalls, 1, nil)
		}
		if u.Storm {
			t.stormCalls.add(attribute.NewSet(attribute.String("class", string(u.Class)), attribute.String("tool", t.tools.bound(u.Last().ToolName))), 1)
		}
	}
	for _, f := range tr.Findings {
		t.add(t.b.ProcessorRetryStormFindings, 1, t.findings[f.Kind])
	}
	t.unseen(tr.Unseen)
}

// unseen records a trace's unseen tool calls by reason and scope: an openCounter, as the
// scopes are not known ahead.
func (t *telemetry) unseen(counts map[analysis.UnseenKey]int) {
	for k, n := range counts {
		t.unseenCalls.add(attribute.NewSet(attribute.String("reason", k.Reason), attribute.String("scope", t.scopes.bound(k.Scope))), int64(n))
	}
}

// triaged records the counts of a trace triage proved clean and sampling dropped, the
// same counts analysed records for it.
func (t *telemetry) triaged(st *analysis.Settled) {
	t.add(t.b.ProcessorRetryStormToolAttempts, int64(st.ToolAttempts), nil)
	t.add(t.b.ProcessorRetryStormCalls, int64(st.Calls), nil)
	t.add(t.b.ProcessorRetryStormDegradedCalls, int64(st.DegradedCalls), nil)
	t.clampedTimestamps(st.ClampedStarts, st.ClampedEnds)
	t.unseen(st.Unseen)
}

// decided records one decision; first says it is its trace's first (not that of the rest
// of a provisionally decided trace), which alone counts the trace.
func (t *telemetry) decided(d decision.Decision, cause Cause, latency time.Duration, first bool) {
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

// toolNames admits the first maxToolNames distinct tool names as metric attribute values.
// Shards share it: reads of admitted names take no lock.
type toolNames struct {
	known    sync.Map
	admitted atomic.Int64
	limit    int64
}

func (tn *toolNames) bound(name string) string {
	if name == "" {
		name = toolUnknown
	}
	// A label must be valid UTF-8 or the Prometheus endpoint fails every scrape after it.
	name = strings.ToValidUTF8(name, "\uFFFD")
	if _, ok := tn.known.Load(name); ok {
		return name
	}
	// A slot is taken before the name is stored, so concurrent shards never admit more
	// than limit names (two racing on one new name may waste a slot).
	if tn.admitted.Add(1) > tn.limit {
		return toolOther
	}
	tn.known.LoadOrStore(name, struct{}{})
	return name
}

// openCounter is a counter whose attribute values are not known ahead (a tool name), so its
// series cannot be exported at 0 from the start: an observable counter whose callback
// observes each series at 0 in the first collection that sees it, and at its count from the
// next (internal/zerostart with no hold: a pull reader collects at each scrape, a periodic
// one at each export, so the reader is shown the 0). Shards add to a series' own atomic
// count; only collections take the lock.
type openCounter struct {
	series sync.Map // attribute.Distinct → *openSeries

	mu   sync.Mutex
	held *zerostart.Series[attribute.Distinct]
}

type openSeries struct {
	attrs attribute.Set
	count atomic.Int64
}

func newOpenCounter() *openCounter {
	return &openCounter{held: zerostart.New[attribute.Distinct](0)}
}

func (c *openCounter) add(attrs attribute.Set, n int64) {
	s, ok := c.series.Load(attrs.Equivalent())
	if !ok {
		s, _ = c.series.LoadOrStore(attrs.Equivalent(), &openSeries{attrs: attrs})
	}
	s.(*openSeries).count.Add(n)
}

// observe is the counter's callback: every series, at 0 in its first collection.
func (c *openCounter) observe(_ context.Context, o metric.Int64Observer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.series.Range(func(k, v any) bool {
		s := v.(*openSeries)
		n := s.count.Load()
		if c.held.Zero(k.(attribute.Distinct), now) {
			n = 0
		}
		o.Observe(n, metric.WithAttributeSet(s.attrs))
		return true
	})
	return nil
}
