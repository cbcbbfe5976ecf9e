package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"

// RedactionConfig says where, beyond the tool spans, a kept trace's tool payloads are
// removed when hashing.redact_payloads is on; its keys and defaults are redact.Config's.
type RedactionConfig = redact.Config
