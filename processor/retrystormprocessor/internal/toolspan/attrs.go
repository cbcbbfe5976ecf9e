package toolspan

import "go.opentelemetry.io/collector/pdata/pcommon"

// attrs reads one span's attributes by source. A tool span is read for some forty
// sources; indexed, its attributes are walked once (one map lookup per attribute) instead
// of once per source.
type attrs struct {
	m  pcommon.Map
	ix *attrIndex // nil: each read scans m
}

func (a attrs) get(src source) (pcommon.Value, bool) {
	if a.ix != nil {
		return a.ix.get(src.id)
	}
	return a.m.Get(src.Key)
}

// attrIndex holds, for the span last loaded, the value of every attribute key a source
// reads. It belongs to one Extractor.
type attrIndex struct {
	ids  map[string]int32
	vals []pcommon.Value
	// gen[id] == cur marks vals[id] as loaded for the current span.
	gen []uint32
	cur uint32
}

// register returns the id of key, adding it.
func (ix *attrIndex) register(key string) int32 {
	if id, ok := ix.ids[key]; ok {
		return id
	}
	id := int32(len(ix.vals))
	ix.ids[key] = id
	ix.vals = append(ix.vals, pcommon.Value{})
	ix.gen = append(ix.gen, 0)
	return id
}

// load indexes m. Of a key repeated in m (invalid OTLP) the first value wins, as with
// pcommon.Map.Get.
func (ix *attrIndex) load(m pcommon.Map) attrs {
	ix.cur++
	if ix.cur == 0 { // wrapped: forget every mark
		clear(ix.gen)
		ix.cur = 1
	}
	for k, v := range m.All() {
		if id, ok := ix.ids[k]; ok && ix.gen[id] != ix.cur {
			ix.gen[id], ix.vals[id] = ix.cur, v
		}
	}
	return attrs{m: m, ix: ix}
}

func (ix *attrIndex) get(id int32) (pcommon.Value, bool) {
	if ix.gen[id] != ix.cur {
		return pcommon.Value{}, false
	}
	return ix.vals[id], true
}
