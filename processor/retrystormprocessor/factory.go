// Package retrystormprocessor implements the retry_storm processor: it buffers each agent
// trace, finds retry storms and divergences in its tool calls, tail-samples the trace, and
// annotates what it keeps.
package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

const (
	defaultDecisionWait     = 30 * time.Second
	defaultRootGrace        = 2 * time.Second
	defaultMaxBufferedBytes = 256 << 20
	defaultKeptTraces       = 100_000
	defaultKeptBytes        = 32 << 20
	defaultDroppedTraces    = 1_000_000
)

// NewFactory returns the factory of the retry_storm processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(metadata.Type, createDefaultConfig,
		processor.WithTraces(createTraces, metadata.TracesStability))
}

func createDefaultConfig() component.Config {
	return &Config{
		DecisionWait:     defaultDecisionWait,
		RootGrace:        defaultRootGrace,
		MaxBufferedBytes: defaultMaxBufferedBytes,
		DecisionCache:    DecisionCacheConfig{KeptTraces: defaultKeptTraces, KeptBytes: defaultKeptBytes, DroppedTraces: defaultDroppedTraces},
		Sampling:         sample.DefaultConfig(),
		AnalysisConfig:   analysis.DefaultConfig(),
		Hashing:          HashingConfig{RedactPayloads: true},
		Redaction:        redact.DefaultConfig(),
	}
}

func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	return newRetryStormProcessor(set, cfg.(*Config), next)
}
