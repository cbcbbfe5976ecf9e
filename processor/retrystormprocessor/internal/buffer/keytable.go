package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// A shard interns at most maxInternedKeys attribute keys of at most maxInternedKeyLen bytes,
// so hostile traffic with ever-new keys cannot grow the table without bound. Maps of more
// than maxCompactedAttrs attributes are left as they are: the rebuild is quadratic in their
// length, and no instrumentation sends that many.
const (
	maxInternedKeys   = 4096
	maxInternedKeyLen = 128
	maxCompactedAttrs = 128
)

// keyTable compacts the attributes of buffered spans. A decoded span holds its attributes in
// a slice grown by appending (up to twice the room it needs) and a separate string for each
// key, though every span of an instrumentation repeats the same few keys. Compacted, the
// span holds a slice of exactly its length whose keys point into one shared copy. It is
// owned by one shard and not safe for concurrent use.
type keyTable struct {
	keys map[string]string
	// last holds the interned keys of the previous map: spans of one kind repeat the same
	// keys in the same order, so most keys are found there without hashing.
	last    []string
	scratch []string
}

func newKeyTable() *keyTable { return &keyTable{keys: map[string]string{}} }

func (t *keyTable) intern(k string) string {
	if s, ok := t.keys[k]; ok {
		return s
	}
	if len(t.keys) >= maxInternedKeys || len(k) > maxInternedKeyLen {
		return k
	}
	k = strings.Clone(k)
	t.keys[k] = k
	return k
}

// compact rebuilds m with interned keys in a slice of exactly its length. Values move, they
// are not copied, and the order stays. A map with a duplicate key (invalid OTLP) is left as
// it is: the rebuild would merge the duplicates.
func (t *keyTable) compact(m pcommon.Map) {
	n := m.Len()
	if n == 0 || n > maxCompactedAttrs {
		return
	}
	keys := t.scratch[:0]
	defer func() { t.scratch, t.last = t.last[:0], keys }()
	for k := range m.All() {
		if i := len(keys); i < len(t.last) && t.last[i] == k {
			k = t.last[i]
		} else {
			k = t.intern(k)
		}
		for _, prev := range keys {
			if prev == k {
				return
			}
		}
		keys = append(keys, k)
	}
	fresh := pcommon.NewMap()
	fresh.EnsureCapacity(n)
	i := 0
	for _, v := range m.All() {
		v.MoveTo(fresh.PutEmpty(keys[i]))
		i++
	}
	fresh.MoveTo(m)
}
