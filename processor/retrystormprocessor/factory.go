// Package retrystormprocessor implements the retry_storm processor: it buffers each agent
// trace, finds retry storms and divergences in its tool calls, tail-samples the trace, and
// annotates what it keeps.
package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// NewFactory returns the factory of the retry_storm processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(metadata.Type, createDefaultConfig,
		processor.WithTraces(createTraces, metadata.TracesStability))
}

// createDefaultConfig is the defaults of the packages that own each block.
func createDefaultConfig() component.Config {
	return &Config{Buffering: true, BufferConfig: buffer.DefaultConfig(), StagesConfig: verdict.DefaultStages()}
}

func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	return newRetryStormProcessor(set, cfg.(*Config), next)
}
