package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/component"

	"github.com/retrystorm/retrystorm/internal/metadatatest"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// The instruments, the attribute constants and the README's telemetry table say what
// metadata.yaml says.
func TestMetadataAgreesWithCodeAndReadme(t *testing.T) {
	metadatatest.Check(t, metadatatest.Component{
		Metadata:  "../../metadata.yaml",
		Readme:    "../../README.md",
		Dir:       ".",
		Type:      Type,
		Stability: map[string]component.StabilityLevel{"traces": TracesStability},
		Collected: metadatatest.Collect(t, NewTelemetryBuilder, nil),
	})
}

// The schema values the exporter records are the records' own.
func TestSchemaValuesAreTheRecordSchemas(t *testing.T) {
	assert.Equal(t, stormrecord.Schema, AttributeSchemaRetrystormStormV1)
	assert.Equal(t, stormrecord.FindingSchema, AttributeSchemaRetrystormFindingV1)
}
