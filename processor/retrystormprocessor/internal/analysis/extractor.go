package analysis

import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"

// Extractor is the analyzer's tool-span extractor, for spans read outside an analysis (late
// spans of a kept trace). It is the analyzer's own: use it on the analyzer's goroutine.
func (an *Analyzer) Extractor() *toolspan.Extractor { return an.x }
