package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"fmt"
	"sync"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// Verdict is what the analysis makes of one whole trace, as a sampling policy.
type Verdict struct {
	// Keep is true when the trace shows a signal whose keep_percent its trace id passes.
	Keep bool
	// Reason is the signal the decision read (storm, tool_error, divergence, span_error,
	// incomplete: the one with the most generous rate, ties broken in that order), or
	// clean for a trace with none.
	Reason string
	// Threshold is the consistent-sampling threshold the trace id was compared with:
	// always-sample for a signal at 100%, never-sample for a clean trace.
	Threshold sampling.Threshold
}

// TraceVerdict runs the retry_storm processor's analysis on whole traces another sampler
// holds, and samples the traces it finds a signal in at that signal's keep_percent,
// decided on the trace id as the processor decides. It is safe for concurrent use.
type TraceVerdict struct {
	engine *verdictEngine
	// verdicts are the processor's verdicts at these rates, each used by one evaluation
	// at a time (a verdict holds an analyzer and scratch space).
	verdicts sync.Pool
}

// verdictEngine is what every TraceVerdict made from one configuration shares: that
// configuration, the HMAC key and the stale-cache memory.
type verdictEngine struct {
	logger *zap.Logger
	policy *PolicyConfig
	key    []byte
	// memory is the cross-trace result memory of the stale-cache check; nil when
	// divergence.stale_cache.remembered_results is 0.
	memory *stalecache.Memory
}

// NewTraceVerdict validates cfg and returns its TraceVerdict. key is the HMAC key of the
// payload hashes (PolicyConfig.ReadKey; nil: plain SHA-256).
func NewTraceVerdict(set component.TelemetrySettings, cfg *PolicyConfig, key []byte) (*TraceVerdict, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := set.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	if key != nil && len(key) < payload.MinKeyBytes {
		logger.Warn("hashing key is short; hashes of low-entropy arguments are easier to brute-force",
			zap.Int("hashing.key.min_bytes", payload.MinKeyBytes))
	}
	e := &verdictEngine{logger: logger, policy: cfg, key: key}
	if n := cfg.Divergence.StaleCache.RememberedResults; n > 0 {
		// No suspect is held (stalecache.HoldSuspects): a sampler's decision is final, so a
		// finding found later could not change it.
		e.memory = stalecache.New(n)
	}
	return e.withKeepPercent(cfg.KeepPercent)
}

// WithKeepPercent returns a TraceVerdict with other keep rates that shares v's analyzers
// and stale-cache memory: every policy of one extension sees every trace's results.
func (v *TraceVerdict) WithKeepPercent(kp KeepPercentConfig) (*TraceVerdict, error) {
	if err := kp.ValidateAt("keep_percent"); err != nil {
		return nil, err
	}
	return v.engine.withKeepPercent(kp)
}

func (e *verdictEngine) withKeepPercent(kp KeepPercentConfig) (*TraceVerdict, error) {
	// Clean traces are left to the sampler's other policies: clean_percent 0. The
	// tracestate is not read (Evaluate passes none): the decision is the trace id's.
	stages := e.policy.stages(kp)
	policy, err := sample.NewPolicy(stages.Sampling)
	if err != nil {
		return nil, fmt.Errorf("build retry_storm policy rates: %w", err)
	}
	cfg := verdict.Config{Stages: stages, Key: e.key}
	shared := verdict.Shared{Policy: policy, Logger: e.logger}
	if e.memory != nil {
		// A typed nil in the interface would turn the check on: set only when remembered.
		shared.Memory = e.memory
	}
	v := &TraceVerdict{engine: e}
	v.verdicts.New = func() any { return verdict.New(cfg, shared) }
	return v, nil
}

// Stateful reports that a verdict can depend on traces evaluated before: the stale-cache
// memory is on.
func (v *TraceVerdict) Stateful() bool { return v.engine.memory != nil }

// Evaluate analyses td, the spans of one trace, and decides it. It never modifies td. An
// error means the analysis failed on td (a bug met by odd input, recovered): the trace is
// not kept for it.
func (v *TraceVerdict) Evaluate(td ptrace.Traces) (out Verdict, err error) {
	vd := v.verdicts.Get().(*verdict.Verdict)
	defer func() {
		if r := recover(); r != nil {
			// The verdict's scratch space may be half written: it is not reused.
			v.engine.logger.Error("retry_storm policy: analysis failed on a trace; it is not kept for a signal",
				zap.Any("panic", r))
			out, err = Verdict{Reason: string(sample.ReasonClean), Threshold: sampling.NeverSampleThreshold},
				fmt.Errorf("analyse trace for the retry_storm policy: %v", r)
			return
		}
		v.verdicts.Put(vd)
	}()
	d := vd.Assess(td)
	return Verdict{Keep: d.Keep, Reason: string(d.Reason), Threshold: d.Threshold}, nil
}

// ResultMemory is the memory behind the stale-cache check as a TraceVerdict fills it: the
// results of every trace the policy assessed. The retry_storm processor after the sampler
// (`buffering: false`) checks stale reads against it, so a read copied from a trace the
// sampler dropped is still found.
type ResultMemory struct{ m *stalecache.Memory }

// ResultMemory returns v's result memory, nil when the stale-cache check is off.
func (v *TraceVerdict) ResultMemory() *ResultMemory {
	if v.engine.memory == nil {
		return nil
	}
	return &ResultMemory{m: v.engine.memory}
}

// resultMemorySource is what the processor looks for among the collector's extensions:
// the retry_storm policy extension.
type resultMemorySource interface {
	ResultMemory() *ResultMemory
}
