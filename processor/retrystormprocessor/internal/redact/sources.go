package redact

import (
	"iter"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// payloadSource is one configured source: an attribute key, and the path of an element
// inside it (a map or a JSON string) when the source reads one.
type payloadSource struct {
	attrsource.Source
	// flat is key+".", the prefix of flattened forms.
	flat string
}

func parseSources(list []string) []payloadSource {
	out := make([]payloadSource, 0, len(list))
	for _, src := range attrsource.ParseList(list) {
		out = append(out, payloadSource{Source: src, flat: src.Key + "."})
	}
	return out
}

// read yields what src reads of attribute k with value v: the value, or every element at
// src's path, read as the hash reads it (payload.Elements): where a document repeats a
// member, the tool got the last one and the document carries the others, so each is hunted.
// Flattened forms of the key (key.a.b) are the value's own parts and are read whole.
func (src payloadSource) read(k string, v pcommon.Value) iter.Seq[pcommon.Value] {
	switch reads, whole := src.reads(k); {
	case !reads:
		return func(func(pcommon.Value) bool) {}
	case whole:
		return payload.Elements(v, nil)
	}
	return payload.Elements(v, src.Path)
}

// reads says whether src reads anything of attribute k, and whether what it reads is the
// value whole (the source has no path, or k is a flattened form of its key). Callers on a
// hot path test it before they range over read, whose iterator is allocated.
func (src payloadSource) reads(k string) (reads, whole bool) {
	if k == src.Key {
		return true, len(src.Path) == 0
	}
	return strings.HasPrefix(k, src.flat), true
}
