package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// AttributesConfig lists, for each attempt field, the span attributes it is read from, in
// order: the first present wins. An entry `key#a.b` reads the element a.b inside the
// attribute (a map or a JSON string). Setting a key replaces its whole default list. The
// engine reads the same lists: their keys and defaults are attrsource.Lists's.
type AttributesConfig = attrsource.Lists

// RecognitionConfig says which spans are tool-call attempts; its keys and defaults are
// toolspan.Recognition's. Setting a key replaces its whole default list.
type RecognitionConfig = toolspan.Recognition

// ToolSpanRuleConfig is one recognition rule: exactly one of attribute, span_name and
// span_name_prefix.
type ToolSpanRuleConfig = toolspan.Rule
