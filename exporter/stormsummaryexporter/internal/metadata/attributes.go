package metadata // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"

// AttrSchema is the attribute of records_written, records_superseding and
// records_deduplicated naming the record's schema.
const AttrSchema = "schema"

// Values of the exporter's metric attributes, one per enum value in metadata.yaml, named
// Attribute<attribute><value> as mdatagen names them.
const (
	// schema: a storm (call) record, stormrecord.Schema.
	AttributeSchemaRetrystormStormV1 = "retrystorm.storm/v1"
	// schema: a finding record, stormrecord.FindingSchema.
	AttributeSchemaRetrystormFindingV1 = "retrystorm.finding/v1"
)
