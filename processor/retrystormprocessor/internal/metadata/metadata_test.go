package metadata

import (
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/retrystorm/retrystorm/internal/metadatatest"
)

// The instruments, the attribute constants and the README's telemetry table say what
// metadata.yaml says.
func TestMetadataAgreesWithCodeAndReadme(t *testing.T) {
	observeBuffered := func(b *TelemetryBuilder) error {
		return b.RegisterBufferedCallback(func() (bytes, traces, spans int64) { return 1, 1, 1 })
	}
	metadatatest.Check(t, metadatatest.Component{
		Metadata:     "../../metadata.yaml",
		Readme:       "../../README.md",
		ReadmePrefix: "otelcol_processor_retry_storm_",
		Dir:          ".",
		Type:         Type,
		Stability:    map[string]component.StabilityLevel{"traces": TracesStability},
		Collected:    metadatatest.Collect(t, NewTelemetryBuilder, observeBuffered),
	})
}
