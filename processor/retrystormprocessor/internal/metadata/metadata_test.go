package metadata

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/retrystorm/retrystorm/internal/metadatatest"
)

// The instruments, the attribute constants and the README's telemetry table say what
// metadata.yaml says.
func TestMetadataAgreesWithCodeAndReadme(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, provider.Shutdown(t.Context())) }()
	builder, err := NewTelemetryBuilder(component.TelemetrySettings{MeterProvider: provider})
	require.NoError(t, err)
	defer builder.Shutdown()
	metadatatest.RecordOnce(t, builder)
	require.NoError(t, builder.RegisterBufferedCallback(func() (bytes, traces, spans int64) { return 1, 1, 1 }))

	metadatatest.Check(t, metadatatest.Component{
		Metadata:     "../../metadata.yaml",
		Readme:       "../../README.md",
		ReadmePrefix: "otelcol_processor_retry_storm_",
		Dir:          ".",
		Type:         Type,
		Stability:    map[string]component.StabilityLevel{"traces": TracesStability},
		Collected:    metadatatest.Collect(t, reader),
	})
}
