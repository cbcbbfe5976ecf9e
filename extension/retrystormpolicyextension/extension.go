package retrystormpolicyextension // import "github.com/retrystorm/retrystorm/extension/retrystormpolicyextension"

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor/pkg/samplingpolicy"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"
	otelmetric "go.opentelemetry.io/otel/metric"

	"github.com/retrystorm/retrystorm/extension/retrystormpolicyextension/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

var errNotStarted = errors.New("retry_storm policy extension is not started: its policies exist from its Start on")

// policyExtension builds one TraceVerdict at Start, once the HMAC key is read; every
// policy's evaluator shares its analyzers and its stale-cache memory.
type policyExtension struct {
	cfg           *Config
	set           extension.Settings
	evaluations   otelmetric.Int64Counter
	attributeSets map[[2]string]otelmetric.AddOption

	mu      sync.Mutex
	verdict *retrystormprocessor.TraceVerdict
}

var (
	_ extension.Extension      = (*policyExtension)(nil)
	_ samplingpolicy.Extension = (*policyExtension)(nil)
)

func newPolicyExtension(set extension.Settings, cfg *Config) (*policyExtension, error) {
	evaluations, err := set.MeterProvider.Meter(metadata.ScopeName).Int64Counter(metadata.Evaluations,
		otelmetric.WithUnit("{trace}"),
		otelmetric.WithDescription("Traces tail_sampling asked a retry_storm policy to decide, by decision and reason."))
	if err != nil {
		return nil, fmt.Errorf("create retry_storm policy telemetry: %w", err)
	}
	sets := map[[2]string]otelmetric.AddOption{}
	for _, decision := range []string{metadata.DecisionSampled, metadata.DecisionNotSampled, metadata.DecisionError} {
		for _, reason := range metadata.Reasons {
			sets[[2]string{decision, reason}] = evaluationAttributes(decision, reason)
		}
	}
	return &policyExtension{cfg: cfg, set: set, evaluations: evaluations, attributeSets: sets}, nil
}

// Start reads the HMAC key, as the retry_storm processor does, and builds the analysis.
func (x *policyExtension) Start(context.Context, component.Host) error {
	key, err := x.cfg.ReadKey()
	if err != nil {
		return fmt.Errorf("start retry_storm policy extension: %w", err)
	}
	v, err := retrystormprocessor.NewTraceVerdict(x.set.TelemetrySettings, x.cfg, key)
	if err != nil {
		return fmt.Errorf("start retry_storm policy extension: %w", err)
	}
	x.mu.Lock()
	x.verdict = v
	x.mu.Unlock()
	return nil
}

// ResultMemory is the memory behind the policies' stale-cache check, for the retry_storm
// processor after tail_sampling (`buffering: false`) to check stale reads against every
// trace the policies assessed, kept or not. Nil before Start or with the check off.
func (x *policyExtension) ResultMemory() *retrystormprocessor.ResultMemory {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.verdict == nil {
		return nil
	}
	return x.verdict.ResultMemory()
}

// Shutdown holds nothing to flush: a verdict is made while tail_sampling waits for it.
func (*policyExtension) Shutdown(context.Context) error { return nil }

// NewEvaluator returns the evaluator of one tail_sampling policy; raw is the policy's
// retry_storm block (nil when it has none), which may override keep_percent.
func (x *policyExtension) NewEvaluator(policyName string, raw map[string]any) (samplingpolicy.Evaluator, error) {
	x.mu.Lock()
	base := x.verdict
	x.mu.Unlock()
	if base == nil {
		return nil, errNotStarted
	}
	s, err := decodePolicySettings(x.cfg.KeepPercent, raw)
	if err != nil {
		return nil, fmt.Errorf("retry_storm policy %q: %w", policyName, err)
	}
	v, err := base.WithKeepPercent(s.KeepPercent)
	if err != nil {
		return nil, fmt.Errorf("retry_storm policy %q: %w", policyName, err)
	}
	return &evaluator{verdict: v, count: x.count}, nil
}

// evaluator is one policy's: the shared analysis at the policy's rates. tail_sampling calls
// each evaluator from one shard's loop, but the evaluators of several shards at once: the
// verdict is safe for concurrent use.
type evaluator struct {
	verdict *retrystormprocessor.TraceVerdict
	count   func(ctx context.Context, decision, reason string)
}

var _ samplingpolicy.ThresholdEvaluator = (*evaluator)(nil)

// Evaluate samples a trace the analysis finds a kept signal in; any other trace is not
// sampled by this policy, left to the others.
func (e *evaluator) Evaluate(ctx context.Context, id pcommon.TraceID, td *samplingpolicy.TraceData) (samplingpolicy.Decision, error) {
	d, _, err := e.EvaluateWithThreshold(ctx, id, td)
	return d, err
}

// EvaluateWithThreshold is Evaluate with the threshold the trace id passed: tail_sampling
// writes it into tracestate when its tracestate feature gate is on.
func (e *evaluator) EvaluateWithThreshold(ctx context.Context, _ pcommon.TraceID, td *samplingpolicy.TraceData) (samplingpolicy.Decision, sampling.Threshold, error) {
	if td == nil {
		e.count(ctx, metadata.DecisionNotSampled, "clean")
		return samplingpolicy.NotSampled, sampling.NeverSampleThreshold, nil
	}
	v, err := e.verdict.Evaluate(td.ReceivedBatches)
	if err != nil {
		e.count(ctx, metadata.DecisionError, v.Reason)
		return samplingpolicy.NotSampled, sampling.NeverSampleThreshold, err
	}
	if !v.Keep {
		e.count(ctx, metadata.DecisionNotSampled, v.Reason)
		return samplingpolicy.NotSampled, v.Threshold, nil
	}
	e.count(ctx, metadata.DecisionSampled, v.Reason)
	return samplingpolicy.Sampled, v.Threshold, nil
}

// IsStateful is true when the stale-cache memory is on: a verdict then depends on the
// results of traces evaluated before.
func (e *evaluator) IsStateful() bool { return e.verdict.Stateful() }

// count adds one evaluation. The attribute sets are made once: tail_sampling evaluates
// every trace.
func (x *policyExtension) count(ctx context.Context, decision, reason string) {
	opt, ok := x.attributeSets[[2]string{decision, reason}]
	if !ok {
		opt = evaluationAttributes(decision, reason)
	}
	x.evaluations.Add(ctx, 1, opt)
}

func evaluationAttributes(decision, reason string) otelmetric.AddOption {
	return otelmetric.WithAttributes(attribute.String(metadata.AttributeDecision, decision), attribute.String(metadata.AttributeReason, reason))
}
