package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrystorm/retrystorm/internal/zerostart"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

// Attribute values of the verdict's metrics are metadata's Attribute constants, and these.
const (
	// MaxToolNames bounds the tool attribute of storm_calls and the scope attribute of
	// unseen_tool_calls; later names count as ToolOther.
	MaxToolNames = 100
	ToolOther    = "_other"
	toolUnknown  = "_unknown"
)

// Telemetry records what the verdict finds, with precomputed attribute sets, so recording
// a decision allocates nothing but the storm_calls attributes. One is shared by every
// shard's Verdict; the store records its own metrics on the same builder.
type Telemetry struct {
	b          *metadata.TelemetryBuilder
	tools      toolNames
	stormCalls *openCounter
	// scopes bounds unseen_tool_calls' scope attribute as tools bounds storm_calls' tool.
	scopes      toolNames
	unseenCalls *openCounter
	findings    map[string]metric.AddOption
	signals     map[[2]string]metric.AddOption
	where       map[string]metric.AddOption
	suspect     map[string]metric.AddOption
	lateFind    map[string]metric.AddOption
}

// NewTelemetry makes the verdict's metrics on b and exports every series whose attribute
// values are known ahead at 0 (README, "Series that start at zero").
func NewTelemetry(b *metadata.TelemetryBuilder) *Telemetry {
	t := &Telemetry{
		b: b, tools: toolNames{limit: MaxToolNames}, stormCalls: newOpenCounter(),
		scopes: toolNames{limit: MaxToolNames}, unseenCalls: newOpenCounter(),
		findings: attrOptions("kind", findings.Kinds...),
		signals:  map[[2]string]metric.AddOption{},
		where:    attrOptions("where", redactedWhere...),
		suspect:  attrOptions("outcome", metadata.AttributeSuspectOutcomeHeld, metadata.AttributeSuspectOutcomeResolved, metadata.AttributeSuspectOutcomeExpired, metadata.AttributeSuspectOutcomeEvicted),
		lateFind: attrOptions("outcome", metadata.AttributeLateFindingOutcomeForwarded, metadata.AttributeLateFindingOutcomeTraceDropped, metadata.AttributeLateFindingOutcomeNextConsumerError, metadata.AttributeLateFindingOutcomeShutdown),
	}
	for _, c := range ProvisionalCauses {
		for _, r := range sample.SignalReasons {
			t.signals[[2]string{c, string(r)}] = metric.WithAttributeSet(attribute.NewSet(attribute.String("cause", c), attribute.String("reason", string(r))))
		}
	}
	t.startAtZero()
	return t
}

// Register registers the verdict's observable counters, storm_calls and unseen_tool_calls.
func (t *Telemetry) Register() error {
	if err := t.b.RegisterStormCallsCallback(t.stormCalls.observe); err != nil {
		return err
	}
	return t.b.RegisterUnseenToolCallsCallback(t.unseenCalls.observe)
}

// startAtZero exports, at 0, every series of every counter of the verdict whose attribute
// values are a known, bounded set. The SDK exports a series from its first Add; one that
// first appears with its first event holds that event in its first sample, which rate()
// and increase() never count, and until then a panel has no data rather than 0. A counter
// whose attribute values are not known ahead (a tool name) is an openCounter instead.
func (t *Telemetry) startAtZero() {
	ctx := context.Background()
	b := t.b
	for _, c := range []metric.Int64Counter{b.ProcessorRetryStormToolAttempts, b.ProcessorRetryStormIncompleteAttempts,
		b.ProcessorRetryStormCalls, b.ProcessorRetryStormDegradedCalls, b.ProcessorRetryStormStatusFlipCalls,
		b.ProcessorRetryStormStatusRemapped, b.ProcessorRetryStormValuesNotHunted} {
		c.Add(ctx, 0)
	}
	for _, c := range []struct {
		counter metric.Int64Counter
		series  []metric.AddOption
	}{
		{b.ProcessorRetryStormFindings, slices.Collect(maps.Values(t.findings))},
		{b.ProcessorRetryStormLateSignals, slices.Collect(maps.Values(t.signals))},
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

func (t *Telemetry) add(c metric.Int64Counter, n int64, opt metric.AddOption) {
	if n == 0 {
		return
	}
	if opt == nil {
		c.Add(context.Background(), n)
		return
	}
	c.Add(context.Background(), n, opt)
}

// lateSignal counts the rest of a provisionally decided trace that brought a signal: the
// cause of the provisional decision and the signal's sampling reason.
func (t *Telemetry) lateSignal(cause string, reason sample.Reason) {
	t.add(t.b.ProcessorRetryStormLateSignals, 1, t.signals[[2]string{cause, string(reason)}])
}

var redactedWhere = []string{metadata.AttributeWhereToolSpan, metadata.AttributeWhereIdempotencyKey, metadata.AttributeWhereMessage, metadata.AttributeWhereEvent,
	metadata.AttributeWhereScrubbed, metadata.AttributeWhereUnparseable, metadata.AttributeWhereConfigured}

// redacted counts what redaction removed from one kept trace (or its late spans), and the
// payload values it did not hunt.
func (t *Telemetry) redacted(st redact.Stats) {
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
func (t *Telemetry) suspects(outcome string, n int) {
	t.add(t.b.ProcessorRetryStormStaleSuspects, int64(n), t.suspect[outcome])
}

// lateFindings counts findings found after their trace was decided, by outcome.
func (t *Telemetry) lateFindings(outcome string, n int64) {
	t.add(t.b.ProcessorRetryStormLateFindings, n, t.lateFind[outcome])
}

// finding counts one finding found outside an analysis (a late one).
func (t *Telemetry) finding(kind string) {
	t.add(t.b.ProcessorRetryStormFindings, 1, t.findings[kind])
}

func (t *Telemetry) remapped(n int) { t.add(t.b.ProcessorRetryStormStatusRemapped, int64(n), nil) }

// analysed records what the analysis of one decided trace found.
func (t *Telemetry) analysed(tr *analysis.Trace) {
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
func (t *Telemetry) unseen(counts map[analysis.UnseenKey]int) {
	for k, n := range counts {
		t.unseenCalls.add(attribute.NewSet(attribute.String("reason", k.Reason), attribute.String("scope", t.scopes.bound(k.Scope))), int64(n))
	}
}

// triaged records the counts of a trace triage proved clean and sampling dropped, the
// same counts analysed records for it.
func (t *Telemetry) triaged(st *analysis.Settled) {
	t.add(t.b.ProcessorRetryStormToolAttempts, int64(st.ToolAttempts), nil)
	t.add(t.b.ProcessorRetryStormCalls, int64(st.Calls), nil)
	t.add(t.b.ProcessorRetryStormDegradedCalls, int64(st.DegradedCalls), nil)
	t.clampedTimestamps(st.ClampedStarts, st.ClampedEnds)
	t.unseen(st.Unseen)
}

// toolNames admits the first MaxToolNames distinct tool names as metric attribute values.
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
		return ToolOther
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
