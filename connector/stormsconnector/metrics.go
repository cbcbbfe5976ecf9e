package stormsconnector // import "github.com/retrystorm/retrystorm/connector/stormsconnector"

import (
	"context"
	"sync"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/connector/stormsconnector/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/internal/zerostart"
)

// metric names one of the emitted counters (README, "Metrics").
type metric int

const (
	metricCalls metric = iota
	metricCallsFailed
	metricAttempts
	metricAttemptsFailed
	metricAttemptsIncomplete
	metricStorms
	metricFailedTokens
	metricFindings
	metricRemapped
	numMetrics
)

// metricDef is what a metric is called and which attributes its series carry beyond tool.
type metricDef struct {
	name, unit, description string
	attrs                   []string
}

var metricDefs = [numMetrics]metricDef{
	metricCalls:              {"retrystorm.calls", "{call}", "Logical tool calls (an agent-level chain counts once), extrapolated from sampling.", nil},
	metricCallsFailed:        {"retrystorm.calls.failed", "{call}", "Logical tool calls whose last attempt failed.", nil},
	metricAttempts:           {"retrystorm.attempts", "{attempt}", "Tool attempts by the layer that made them (initial, executor, agent) and wire sends (transport), extrapolated from sampling.", []string{"layer"}},
	metricAttemptsFailed:     {"retrystorm.attempts.failed", "{attempt}", "Tool attempts that failed (error or timeout).", nil},
	metricAttemptsIncomplete: {"retrystorm.attempts.incomplete", "{attempt}", "Tool attempts missing a required or carried field.", nil},
	metricStorms:             {"retrystorm.storms", "{call}", "Retry storms, by class and outermost retrying layer.", []string{"class", "layer"}},
	metricFailedTokens:       {"retrystorm.failed_attempts.tokens", "{token}", "Model tokens spent on failed attempts, by gen_ai.token.type (input, output).", []string{"gen_ai.token.type"}},
	metricFindings:           {"retrystorm.findings", "{finding}", "Divergence findings by kind; trace-level findings carry no tool.", []string{"kind"}},
	metricRemapped:           {"retrystorm.statuses.remapped", "{span}", "Spans whose status retry_storm remapped to ERROR from an isError result or the tool's own failure report.", nil},
}

// series is one data point's identity: the metric, its tool and up to two more values.
type series struct {
	metric metric
	tool   string
	a, b   string
	noTool bool
}

// Tool attribute values beyond the names seen: the overflow rule of the processor.
const (
	toolOther   = "_other"
	toolUnknown = "_unknown"
)

// stormMetrics counts, per series, the weighted (adjusted-count) sum over every span it
// receives, and emits the cumulative sums every flush interval and at shutdown. A new series
// is emitted at 0 for new_series_hold before its sum (README, "Series start at zero").
type stormMetrics struct {
	cfg       MetricsConfig
	next      consumer.Metrics
	logger    *zap.Logger
	malformed func(context.Context, int64)
	seal      *sealCheck

	mu     sync.Mutex
	start  pcommon.Timestamp
	sums   map[series]float64
	order  []series
	tools  map[string]bool
	weight weightCache
	held   *zerostart.Series[series]

	stop chan struct{}
	done chan struct{}
}

func newStormMetrics(cfg MetricsConfig, next consumer.Metrics, logger *zap.Logger, malformed func(context.Context, int64), seal *sealCheck) *stormMetrics {
	return &stormMetrics{
		cfg: cfg, next: next, logger: logger, malformed: malformed, seal: seal,
		start: pcommon.NewTimestampFromTime(time.Now()),
		sums:  map[series]float64{}, tools: map[string]bool{},
		held: zerostart.New[series](cfg.NewSeriesHold),
	}
}

func (m *stormMetrics) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (m *stormMetrics) Start(context.Context, component.Host) error {
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.flushLoop()
	return nil
}

// Shutdown stops the flushing and emits the sums a last time.
func (m *stormMetrics) Shutdown(ctx context.Context) error {
	if m.stop == nil {
		return nil
	}
	close(m.stop)
	<-m.done
	m.stop = nil
	return m.flush(ctx, true)
}

func (m *stormMetrics) flushLoop() {
	defer close(m.done)
	tick := time.NewTicker(m.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			if err := m.flush(context.Background(), false); err != nil {
				m.logger.Warn("emit storm metrics", zap.Error(err))
			}
		}
	}
}

// ConsumeTraces counts the annotations of td's spans (README, "What is counted"): those
// retry_storm sealed.
func (m *stormMetrics) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	malformed, unsealed := 0, 0
	m.mu.Lock()
	for _, span := range tracespans.All(td) {
		if !m.seal.admits(span) {
			unsealed++
			continue
		}
		if !m.countSpan(span) {
			malformed++
		}
	}
	m.mu.Unlock()
	if malformed > 0 {
		m.malformed(ctx, int64(malformed))
	}
	m.seal.skipped(ctx, m.logger, unsealed)
	return nil
}

// countSpan adds what one span says; false when a record on it does not parse.
func (m *stormMetrics) countSpan(span ptrace.Span) bool {
	attrs := span.Attributes()
	_, attempt := attrs.Get(stormrecord.AttrCallAttempts)
	layer, sent := attrs.Get(stormrecord.AttrCallLayer)
	remapped, isRemapped := attrs.Get(stormrecord.AttrStatusRemap)
	summary, hasSummary := attrs.Get(stormrecord.AttrCallSummary)
	finding, hasFinding := attrs.Get(stormrecord.AttrFindingSummary)
	if !attempt && !sent && !isRemapped && !hasSummary && !hasFinding {
		return true
	}
	w := m.weight.of(span.TraceState().AsRaw())
	tool := m.tool(attrs)
	if attempt || sent {
		m.add(series{metric: metricAttempts, tool: tool, a: layer.Str()}, w)
	}
	if attempt {
		if st, ok := attrs.Get(stormrecord.AttrStatus); ok && (st.Str() == "error" || st.Str() == "timeout") {
			m.add(series{metric: metricAttemptsFailed, tool: tool}, w)
		}
		n, _ := attrs.Get(stormrecord.AttrCallAttempt)
		total, _ := attrs.Get(stormrecord.AttrCallAttempts)
		if n.Int() == total.Int() {
			m.add(series{metric: metricCalls, tool: tool}, w)
		}
	}
	if isRemapped && remapped.Bool() {
		m.add(series{metric: metricRemapped, tool: tool}, w)
	}
	ok := true
	if hasSummary {
		record, err := stormrecord.ParseCallSummary(summary, span)
		if err != nil {
			m.logger.Debug("skip a malformed call summary", zap.Error(err))
			ok = false
		} else {
			m.countRecord(span, &record, w)
		}
	}
	if hasFinding {
		record, err := stormrecord.ParseFindingRecord(finding, span)
		if err != nil {
			m.logger.Debug("skip a malformed finding record", zap.Error(err))
			ok = false
		} else {
			for _, f := range record.Findings {
				m.add(series{metric: metricFindings, noTool: true, a: f.Kind}, w)
			}
		}
	}
	return ok
}

// countRecord adds a call's record. A late finding's span carries the call's record again,
// already counted with its trace: only the findings of its events are new.
func (m *stormMetrics) countRecord(span ptrace.Span, r *stormrecord.Record, w float64) {
	tool := m.toolName(r.ToolName)
	if span.Name() == stormrecord.LateFindingSpan {
		events := span.Events()
		for i := 0; i < events.Len(); i++ {
			ev := events.At(i)
			if ev.Name() != stormrecord.FindingEvent {
				continue
			}
			if kind, ok := ev.Attributes().Get(stormrecord.FindingKind); ok {
				m.add(series{metric: metricFindings, tool: tool, a: kind.Str()}, w)
			}
		}
		return
	}
	if r.Storm {
		class := ""
		if r.Class != nil {
			class = *r.Class
		}
		m.add(series{metric: metricStorms, tool: tool, a: class, b: string(r.Layer)}, w)
	}
	if r.Failed() {
		m.add(series{metric: metricCallsFailed, tool: tool}, w)
	}
	if r.FailedTokensIn != nil && *r.FailedTokensIn > 0 {
		m.add(series{metric: metricFailedTokens, tool: tool, a: "input"}, w*float64(*r.FailedTokensIn))
	}
	if r.FailedTokensOut != nil && *r.FailedTokensOut > 0 {
		m.add(series{metric: metricFailedTokens, tool: tool, a: "output"}, w*float64(*r.FailedTokensOut))
	}
	if r.IncompleteAttempts > 0 {
		m.add(series{metric: metricAttemptsIncomplete, tool: tool}, w*float64(r.IncompleteAttempts))
	}
	for _, f := range r.Findings {
		m.add(series{metric: metricFindings, tool: tool, a: f.Kind}, w)
	}
}

func (m *stormMetrics) add(s series, w float64) {
	if _, ok := m.sums[s]; !ok {
		m.order = append(m.order, s)
	}
	m.sums[s] += w
}

func (m *stormMetrics) tool(attrs pcommon.Map) string {
	v, _ := attrs.Get(stormrecord.AttrCallTool)
	return m.toolName(v.Str())
}

// toolName applies the bound: the first max_tools names, then _other; none is _unknown.
func (m *stormMetrics) toolName(name string) string {
	switch {
	case name == "":
		return toolUnknown
	case m.tools[name]:
		return name
	case len(m.tools) >= m.cfg.MaxTools:
		return toolOther
	}
	m.tools[name] = true
	return name
}

// flush emits every series' cumulative sum, a series still held at 0 unless final: the last
// emission, at shutdown, holds every count, as nothing follows it.
func (m *stormMetrics) flush(ctx context.Context, final bool) error {
	md := m.snapshot(time.Now(), final)
	if md.DataPointCount() == 0 {
		return nil
	}
	return m.next.ConsumeMetrics(ctx, md)
}

func (m *stormMetrics) snapshot(at time.Time, final bool) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.order) == 0 {
		return md
	}
	now := pcommon.NewTimestampFromTime(at)
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	var points [numMetrics]pmetric.NumberDataPointSlice
	for _, s := range m.order {
		if points[s.metric] == (pmetric.NumberDataPointSlice{}) {
			def := metricDefs[s.metric]
			out := sm.Metrics().AppendEmpty()
			out.SetName(def.name)
			out.SetUnit(def.unit)
			out.SetDescription(def.description)
			sum := out.SetEmptySum()
			sum.SetIsMonotonic(true)
			sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			points[s.metric] = sum.DataPoints()
		}
		dp := points[s.metric].AppendEmpty()
		dp.SetStartTimestamp(m.start)
		dp.SetTimestamp(now)
		value := m.sums[s]
		if m.held.Zero(s, at) && !final {
			value = 0
		}
		dp.SetDoubleValue(value)
		attrs := dp.Attributes()
		if !s.noTool {
			attrs.PutStr("tool", s.tool)
		}
		values := [2]string{s.a, s.b}
		for i, k := range metricDefs[s.metric].attrs {
			attrs.PutStr(k, values[i])
		}
	}
	return md
}

// weightCache is the adjusted count of the last tracestate seen: the spans of one trace
// share one, so the W3C parse runs about once per trace.
type weightCache struct {
	raw    string
	weight float64
	set    bool
}

// of returns how many spans of the traffic before sampling one kept span stands for: the
// inverse of the sampling probability its `ot=th` threshold says, or 1 when it carries
// none (a trace kept whole).
func (c *weightCache) of(raw string) float64 {
	if c.set && raw == c.raw {
		return c.weight
	}
	w := 1.0
	if raw != "" {
		if ts, err := sampling.NewW3CTraceState(raw); err == nil {
			if n := ts.OTelValue().AdjustedCount(); n > 0 {
				w = n
			}
		}
	}
	c.raw, c.weight, c.set = raw, w, true
	return w
}
