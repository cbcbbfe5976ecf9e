// Package sample decides whether a trace is kept, from its analysis signals and its trace
// id, with OpenTelemetry consistent probability sampling so every collector decides alike.
package sample // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"

import (
	"fmt"
	"strings"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Reason is why a trace is kept (or would be): its strongest signal, or clean. It is the
// retrystorm.sampling.reason annotation and the telemetry's reason attribute.
type Reason string

// Reasons, in priority order; ReasonClean is the reason of a trace with no signal.
const (
	ReasonStorm      Reason = "storm"
	ReasonToolError  Reason = "tool_error"
	ReasonDivergence Reason = "divergence"
	ReasonSpanError  Reason = "span_error"
	ReasonIncomplete Reason = "incomplete"
	ReasonClean      Reason = "clean"
)

// SignalReasons lists the reasons a trace can be kept for besides being clean, in priority
// order.
var SignalReasons = [numSignals]Reason{ReasonStorm, ReasonToolError, ReasonDivergence, ReasonSpanError, ReasonIncomplete}

const numSignals = 5

// Precision is the number of significant hex digits of a threshold written to tracestate,
// as the probabilistic_sampler's default sampling_precision.
const Precision = 4

// Policy holds the thresholds derived from a Config. It is read-only after NewPolicy and safe
// for concurrent use.
type Policy struct {
	keep  [numSignals]sampling.Threshold
	clean sampling.Threshold
	tools map[string]sampling.Threshold
	// strictest is the highest clean threshold, whatever the tools.
	strictest sampling.Threshold
	// ignoreRV derives every trace's randomness from its trace id, never from an `ot=rv`
	// in its tracestate (tracestate_randomness false): a client that writes rv at its
	// maximum keeps its traces at any rate, which a gateway facing untrusted clients must
	// not allow. Stamped tracestates then lose their rv, so the threshold they carry is one
	// the trace id passes.
	ignoreRV bool
}

// NewPolicy converts the percents of cfg to thresholds.
func NewPolicy(cfg Config) (*Policy, error) {
	p := &Policy{tools: make(map[string]sampling.Threshold, len(cfg.Tools)), ignoreRV: !cfg.TraceStateRandomness}
	var err error
	for i, pct := range cfg.KeepPercent.keep() {
		if p.keep[i], err = PercentToThreshold(pct); err != nil {
			return nil, fmt.Errorf("keep_percent.%s: %w", SignalReasons[i], err)
		}
	}
	if p.clean, err = PercentToThreshold(cfg.CleanPercent); err != nil {
		return nil, fmt.Errorf("clean_percent: %w", err)
	}
	p.strictest = p.clean
	for tool, tc := range cfg.Tools {
		if p.tools[tool], err = PercentToThreshold(tc.CleanPercent); err != nil {
			return nil, fmt.Errorf("tools.%s.clean_percent: %w", tool, err)
		}
		if sampling.ThresholdGreater(p.tools[tool], p.strictest) {
			p.strictest = p.tools[tool]
		}
	}
	return p, nil
}

// KeepsClean reports that Decide keeps the trace if it is clean, whatever tools it
// touched: its randomness passes the strictest clean rate. (An incoming threshold the
// randomness passes never changes that.) Such a trace is analysed whether or not it is
// clean, so nothing needs proving first.
func (p *Policy) KeepsClean(traceID pcommon.TraceID, traceState string) bool {
	rnd, _, _ := p.carried(Input{TraceID: traceID, TraceState: traceState})
	return p.strictest != sampling.NeverSampleThreshold && p.strictest.ShouldSample(rnd)
}

// PercentToThreshold converts a percent in [0, 100] to a threshold: 0 never samples, 100
// always does, and values too small to express round up to the smallest probability.
func PercentToThreshold(pct float64) (sampling.Threshold, error) {
	switch {
	case pct < 0 || pct > 100 || pct != pct:
		return sampling.NeverSampleThreshold, fmt.Errorf("percent %v is not between 0 and 100", pct)
	case pct == 0:
		return sampling.NeverSampleThreshold, nil
	case pct == 100:
		return sampling.AlwaysSampleThreshold, nil
	}
	return sampling.ProbabilityToThresholdWithPrecision(max(pct/100, sampling.MinSamplingProbability), Precision)
}

// Signals are the trace-level facts a decision reads, in SignalReasons order.
type Signals [numSignals]bool

// Input is what one decision reads.
type Input struct {
	TraceID pcommon.TraceID
	Signals Signals
	// Tools are the tool names the trace touched.
	Tools []string
	// TraceState is the W3C tracestate of the trace's root span (or first span): its
	// `ot=rv:` replaces the trace id's randomness and its `ot=th:` is respected.
	TraceState string
}

// Decision is the outcome for one trace.
type Decision struct {
	Keep   bool
	Reason Reason
	// Threshold is the effective threshold the decision compared the randomness with.
	Threshold sampling.Threshold
	// Stamp is true when kept spans must carry Threshold in tracestate: the decision was
	// probabilistic (a clean trace, or a signal kept below 100%).
	Stamp bool
}

// Decide applies the policy. A trace with signals is decided by the most generous rate among
// its signals (the reason is that signal, ties broken by priority); a clean trace by its
// clean rate. A probabilistic decision never lowers an incoming threshold.
func (p *Policy) Decide(in Input) Decision {
	d := Decision{Reason: ReasonClean, Threshold: p.cleanThreshold(in.Tools)}
	signalled := false
	for i, present := range in.Signals {
		if present && (!signalled || sampling.ThresholdLessThan(p.keep[i], d.Threshold)) {
			d.Reason, d.Threshold, signalled = SignalReasons[i], p.keep[i], true
		}
	}
	d.Stamp = !signalled || d.Threshold != sampling.AlwaysSampleThreshold
	rnd, incoming, ok := p.carried(in)
	if d.Stamp && ok && sampling.ThresholdGreater(incoming, d.Threshold) {
		d.Threshold = incoming
	}
	d.Keep = d.Threshold != sampling.NeverSampleThreshold && d.Threshold.ShouldSample(rnd)
	d.Stamp = d.Stamp && d.Keep
	return d
}

func (p *Policy) cleanThreshold(tools []string) sampling.Threshold {
	th, found := p.clean, false
	for _, tool := range tools {
		t, ok := p.tools[tool]
		if !ok {
			continue
		}
		if !found || sampling.ThresholdLessThan(t, th) {
			th, found = t, true
		}
	}
	return th
}

// carried returns the randomness of the trace (explicit `rv` else the trace id; the trace id
// alone when the policy ignores rv) and the incoming threshold when one is present and
// consistent with that randomness.
func (p *Policy) carried(in Input) (sampling.Randomness, sampling.Threshold, bool) {
	rnd := sampling.TraceIDToRandomness(in.TraceID)
	if in.TraceState == "" {
		return rnd, sampling.AlwaysSampleThreshold, false
	}
	ts, err := sampling.NewW3CTraceState(in.TraceState)
	if err != nil {
		return rnd, sampling.AlwaysSampleThreshold, false
	}
	if rv, ok := ts.OTelValue().RValueRandomness(); ok && !p.ignoreRV {
		rnd = rv
	}
	th, ok := ts.OTelValue().TValueThreshold()
	// A threshold the randomness does not pass is a lie (the trace should not exist):
	// ignore it, as the probabilistic_sampler does.
	if !ok || !th.ShouldSample(rnd) {
		return rnd, sampling.AlwaysSampleThreshold, false
	}
	return rnd, th, true
}

// Stamp returns raw with its OpenTelemetry threshold set to th. An existing stricter
// threshold is kept (a threshold is never lowered); an unparsable tracestate, or one the
// threshold would make invalid (its ot value past the W3C limit of 256 characters), is
// returned unchanged with the error.
func Stamp(raw string, th sampling.Threshold) (string, error) { return stamp(raw, th, false) }

// Stamp is the package's Stamp for the traces this policy decided: when it ignores rv, the
// rv is removed too, so the randomness a reader derives (the trace id's) passes th.
func (p *Policy) Stamp(raw string, th sampling.Threshold) (string, error) {
	return stamp(raw, th, p.ignoreRV)
}

func stamp(raw string, th sampling.Threshold, clearRV bool) (string, error) {
	ts, err := sampling.NewW3CTraceState(raw)
	if err != nil {
		return raw, fmt.Errorf("parse tracestate: %w", err)
	}
	otel := ts.OTelValue()
	_, hasRV := otel.RValueRandomness()
	clearRV = clearRV && hasRV
	if cur, ok := otel.TValueThreshold(); ok && !sampling.ThresholdLessThan(cur, th) && !clearRV {
		return raw, nil
	}
	if clearRV {
		otel.ClearRValue()
		if cur, ok := otel.TValueThreshold(); ok && !sampling.ThresholdLessThan(cur, th) {
			th = cur
		}
	}
	if err := otel.UpdateTValueWithSampling(th); err != nil {
		return raw, fmt.Errorf("update tracestate threshold: %w", err)
	}
	var b strings.Builder
	if err := ts.Serialize(&b); err != nil {
		return raw, fmt.Errorf("serialize tracestate: %w", err)
	}
	// Serialize does not check lengths: a long ot value can outgrow the limit once the
	// threshold is added.
	if _, err := sampling.NewW3CTraceState(b.String()); err != nil {
		return raw, fmt.Errorf("stamped tracestate would be invalid: %w", err)
	}
	return b.String(), nil
}
