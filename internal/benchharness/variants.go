package benchharness

import (
	"context"
	"fmt"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

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
)

// Variants lists every variant in report order.
var Variants = []string{VariantFloor, VariantFloorHold, VariantFloorPack, VariantTailSampling, VariantRetryStorm, VariantRetryStormUnredacted}

// isFloor reports whether v is one of the floors: consumers that forward nothing.
func isFloor(v string) bool {
	return v == VariantFloor || v == VariantFloorHold || v == VariantFloorPack
}

// TailSamplingConfig is tail_sampling as a user would configure it to keep what retry_storm
// keeps: errors, retried attempts (the explicit attempt attribute at 2 or more) and 5% of
// the rest, deciding when retry_storm does (decision_wait, and decision_wait_after_root_received
// = root_grace), remembering decisions as many as retry_storm's decision cache does, and with
// room for every trace a run holds. bench/tail_sampling.yaml carries the same section.
const TailSamplingConfig = `
decision_wait: 30s
decision_wait_after_root_received: 2s
num_traces: 50000
decision_cache:
  sampled_cache_size: 100000
  non_sampled_cache_size: 1000000
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

// RetryStormConfig is retry_storm with its defaults (decision_wait 30s, root_grace 2s,
// clean_percent 5, …). bench/retry_storm.yaml carries the same section.
const RetryStormConfig = `{}`

// unredacted turns redaction off (YAML, merged before a variant's overrides).
const unredacted = `
hashing:
  redact_payloads: false
`

// holdAll overrides make each processor hold every trace for an hour.
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
// benchmark configuration. The floor forwards nothing.
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
	}
	return nil, fmt.Errorf("unknown variant %q", variant)
}

func newProcessorSubject(ctx context.Context, name string, f processor.Factory, base, overrides string, next consumer.Traces) (*subject, error) {
	cfg, err := loadConfig(f, base, overrides)
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

// loadConfig unmarshals base and then overrides over the factory's default configuration,
// as the collector does with a YAML file, and validates the result.
func loadConfig(f processor.Factory, base, overrides string) (any, error) {
	cfg := f.CreateDefaultConfig()
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
