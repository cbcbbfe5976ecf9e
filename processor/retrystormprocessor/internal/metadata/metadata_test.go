package metadata

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/retrystorm/retrystorm/internal/metadatatest"
)

// The instruments, the attribute constants and the README's telemetry table say what
// metadata.yaml says.
func TestMetadataAgreesWithCodeAndReadme(t *testing.T) {
	observe := func(b *TelemetryBuilder) error {
		return errors.Join(
			b.RegisterBufferedCallback(func() (bytes, traces, spans int64) { return 1, 1, 1 }),
			b.RegisterStormCallsCallback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(1)
				return nil
			}),
			b.RegisterUnseenToolCallsCallback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(1)
				return nil
			}))
	}
	metadatatest.Check(t, metadatatest.Component{
		Metadata:     "../../metadata.yaml",
		Readme:       "../../README.md",
		ReadmePrefix: "otelcol_processor_retry_storm_",
		Dir:          ".",
		Type:         Type,
		Stability:    map[string]component.StabilityLevel{"traces": TracesStability},
		Collected:    metadatatest.Collect(t, NewTelemetryBuilder, observe),
	})
}
