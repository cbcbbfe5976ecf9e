package benchharness

import (
	"context"
	"fmt"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/redactionprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/retrystorm/retrystorm/extension/retrystormpolicyextension"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

// Variant names, in report order.
const (
	VariantFloor = "floor"
	// VariantFloorHold holds every decoded request until shutdown and does nothing else:
	// the least any tail sampler that holds pdata pays (allocation, and the garbage
	// collector marking what it holds).
	VariantFloorHold = "floor_hold"
	// VariantFloorPack holds every request encoded as OTLP until shutdown: the least a tail
	// sampler pays that holds what it buffers as bytes.
	VariantFloorPack    = "floor_pack"
	VariantTailSampling = "tail_sampling"
	VariantRetryStorm   = "retry_storm"
	// VariantRetryStormUnredacted is retry_storm with redact_payloads off: beside
	// retry_storm in one run, what redaction costs.
	VariantRetryStormUnredacted = "retry_storm_unredacted"
	// VariantRetryStormUnfollowed is retry_storm_unredacted without following the model
	// (recognition.follow_model.enabled: false): beside it in one run, what following the
	// model costs. It sees only the tool calls the rules name.
	VariantRetryStormUnfollowed = "retry_storm_unfollowed"
	// VariantTailSamplingRetryStorm is the path for teams that keep tail_sampling:
	// tail_sampling deciding with the retry_storm policy extension, then the retry_storm
	// processor with buffering: false giving every trace it releases the verdict.
	VariantTailSamplingRetryStorm = "tail_sampling_retry_storm"
	// VariantTailSamplingRedaction is what a user assembles from contrib for the same
	// protection without retrystorm: tail_sampling, then the redaction processor.
	VariantTailSamplingRedaction = "tail_sampling_redaction"
)

// Variants lists every variant in report order.
var Variants = []string{VariantFloor, VariantFloorHold, VariantFloorPack, VariantTailSampling, VariantRetryStorm, VariantRetryStormUnredacted,
	VariantRetryStormUnfollowed,
	VariantTailSamplingRetryStorm, VariantTailSamplingRedaction}

// isFloor reports whether v is one of the floors: consumers that forward nothing.
func isFloor(v string) bool {
	return v == VariantFloor || v == VariantFloorHold || v == VariantFloorPack
}

// tailSamplingTiming is when every tail_sampling variant decides and what it remembers:
// when retry_storm does (decision_wait, and decision_wait_after_root_received = root_grace),
// decisions as many as retry_storm's decision cache, and room for every trace a run holds.
const tailSamplingTiming = `
decision_wait: 30s
decision_wait_after_root_received: 2s
num_traces: 50000
decision_cache:
  sampled_cache_size: 100000
  non_sampled_cache_size: 1000000
`

// TailSamplingConfig is tail_sampling as a user would configure it to keep what retry_storm
// keeps: errors, retried attempts (the explicit attempt attribute at 2 or more) and 5% of
// the rest, on tailSamplingTiming. bench/tail_sampling.yaml carries the same section.
const TailSamplingConfig = tailSamplingTiming + `
policies:
  - name: errors
    type: status_code
    status_code:
      status_codes: [ERROR]
  - name: retried_attempts
    type: numeric_attribute
    numeric_attribute:
      key: attempt
      min_value: 2
  - name: clean_baseline
    type: probabilistic
    probabilistic:
      sampling_percentage: 5
`

// TailSamplingRetryStormConfig is tail_sampling on the same timing deciding with the
// retry_storm policy, so it keeps what the retry_storm processor keeps alone: the policy
// samples every trace with a signal (storm, tool error, divergence, error span, incomplete
// record: keep_percent 100 each, the processor's defaults), but it has no clean rate — clean
// traces are left to the sampler's other policies — so a probabilistic 5% baseline stands in
// for the processor's clean_percent 5. Without it the stack would keep fewer traces than
// retry_storm and tail_sampling, and cost less for keeping less.
const TailSamplingRetryStormConfig = tailSamplingTiming + `
policies:
  - name: retry_storm
    type: retry_storm
  - name: clean_baseline
    type: probabilistic
    probabilistic:
      sampling_percentage: 5
`

// RetryStormPolicyConfig is the retry_storm policy extension with its defaults, the
// processor's analysis settings.
const RetryStormPolicyConfig = `{}`

// RetryStormAfterSamplerConfig is the retry_storm processor after tail_sampling: every
// trace it receives is kept and given the verdict at once (annotated, hashed, redacted,
// recorded); the rest are its defaults, redaction on.
const RetryStormAfterSamplerConfig = `
buffering: false
`

// RedactionConfig is the contrib redaction processor as its README shows it, masking card
// numbers, e-mail addresses and IBANs in every string attribute of the kept traces
// (resource, scope, span and event attributes; redact_all_types is off). The card
// patterns are the README's (Visa, MasterCard); the README has none for e-mail addresses
// or IBANs, so the e-mail pattern is the one the processor's own tests use and the IBAN
// pattern takes a country code, check digits and groups of four, spaced or not (the agent
// traffic writes them spaced). summary is left at its default: no audit attributes.
const RedactionConfig = `
allow_all_keys: true
blocked_values:
  - "4[0-9]{12}(?:[0-9]{3})?"
  - "(5[1-5][0-9]{14})"
  - "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}"
  - "[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?"
`

// RetryStormConfig is retry_storm with its defaults (decision_wait 30s, root_grace 2s,
// clean_percent 5, …). bench/retry_storm.yaml carries the same section.
const RetryStormConfig = `{}`

// unredacted turns redaction off (YAML, merged before a variant's overrides).
const unredacted = `
hashing:
  redact_payloads: false
`

// unfollowed turns redaction and following the model off.
const unfollowed = unredacted + `
recognition:
  follow_model:
    enabled: false
`

// holdAll are the overrides that make each buffering variant hold every trace for an
// hour; in the tail_sampling stacks they go to tail_sampling.
var holdAll = map[string]string{
	VariantTailSampling: tailSamplingHoldAll, VariantRetryStorm: retryStormHoldAll,
	VariantTailSamplingRetryStorm: tailSamplingHoldAll, VariantTailSamplingRedaction: tailSamplingHoldAll,
}

// The overrides of holdAll.
const (
	tailSamplingHoldAll = `
decision_wait: 1h
decision_wait_after_root_received: 0s
`
	retryStormHoldAll = `
decision_wait: 1h
root_grace: 1h
max_buffered_bytes: 8589934592
`
)

// subject is one variant set up for a run.
type subject struct {
	name     string
	consumer consumer.Traces
	start    func(context.Context) error
	shutdown func(context.Context) error
}

// newSubject builds a variant forwarding to next; overrides (YAML) are merged over its
// benchmark configuration (over tail_sampling's, in the variants that start with it). The
// floor forwards nothing.
func newSubject(ctx context.Context, variant string, next consumer.Traces, overrides string) (*subject, error) {
	switch variant {
	case VariantFloor:
		f := &floor{}
		nop := func(context.Context) error { return nil }
		return &subject{name: variant, consumer: f, start: nop, shutdown: nop}, nil
	case VariantFloorHold, VariantFloorPack:
		h := &holder{pack: variant == VariantFloorPack}
		nop := func(context.Context) error { return nil }
		return &subject{name: variant, consumer: h, start: nop, shutdown: h.release}, nil
	case VariantTailSampling:
		return newProcessorSubject(ctx, variant, tailsamplingprocessor.NewFactory(), TailSamplingConfig, overrides, next)
	case VariantRetryStorm:
		return newProcessorSubject(ctx, variant, retrystormprocessor.NewFactory(), RetryStormConfig, overrides, next)
	case VariantRetryStormUnredacted:
		return newProcessorSubject(ctx, variant, retrystormprocessor.NewFactory(), RetryStormConfig, unredacted+overrides, next)
	case VariantRetryStormUnfollowed:
		return newProcessorSubject(ctx, variant, retrystormprocessor.NewFactory(), RetryStormConfig, unfollowed+overrides, next)
	case VariantTailSamplingRetryStorm:
		policy := extensionStage{factory: retrystormpolicyextension.NewFactory(), config: RetryStormPolicyConfig}
		return newPipelineSubject(ctx, variant, []extensionStage{policy}, []processorStage{
			{factory: tailsamplingprocessor.NewFactory(), config: TailSamplingRetryStormConfig, overrides: overrides},
			{factory: retrystormprocessor.NewFactory(), config: RetryStormAfterSamplerConfig},
		}, next)
	case VariantTailSamplingRedaction:
		return newPipelineSubject(ctx, variant, nil, []processorStage{
			{factory: tailsamplingprocessor.NewFactory(), config: TailSamplingConfig, overrides: overrides},
			{factory: redactionprocessor.NewFactory(), config: RedactionConfig},
		}, next)
	}
	return nil, fmt.Errorf("unknown variant %q", variant)
}

func newProcessorSubject(ctx context.Context, name string, f processor.Factory, base, overrides string, next consumer.Traces) (*subject, error) {
	cfg, err := loadConfig(f.CreateDefaultConfig(), base, overrides)
	if err != nil {
		return nil, fmt.Errorf("configure %s: %w", name, err)
	}
	p, err := f.CreateTraces(ctx, processortest.NewNopSettings(f.Type()), cfg, next)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	return &subject{
		name: name, consumer: p,
		start:    func(ctx context.Context) error { return p.Start(ctx, componenttest.NewNopHost()) },
		shutdown: p.Shutdown,
	}, nil
}

// loadConfig unmarshals base and then overrides over a factory's default configuration cfg,
// as the collector does with a YAML file, and validates the result.
func loadConfig(cfg component.Config, base, overrides string) (component.Config, error) {
	conf := confmap.New()
	for _, doc := range []string{base, overrides} {
		if doc == "" {
			continue
		}
		retrieved, err := confmap.NewRetrievedFromYAML([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("parse configuration: %w", err)
		}
		part, err := retrieved.AsConf()
		if err != nil {
			return nil, fmt.Errorf("parse configuration: %w", err)
		}
		if err := conf.Merge(part); err != nil {
			return nil, fmt.Errorf("merge configuration: %w", err)
		}
	}
	if err := conf.Unmarshal(cfg); err != nil {
		return nil, fmt.Errorf("unmarshal configuration: %w", err)
	}
	if err := confmap.Validate(cfg); err != nil {
		return nil, fmt.Errorf("validate configuration: %w", err)
	}
	return cfg, nil
}
