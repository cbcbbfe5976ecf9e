package redact

import "strings"

// keyKind is what the configuration makes of an attribute key, a bit a list.
type keyKind uint8

const (
	kindDelete keyKind = 1 << iota
	kindIdempotencyKey
	kindMessage
)

// keyKinds finds, in one lookup, the lists an attribute key is on: exact keys in a map,
// `*` globs tried after.
type keyKinds struct {
	exact map[string]keyKind
	// lengths has bit n set when an exact key of n bytes is listed (longer ones: bit 63):
	// most attribute keys are on no list, and most are told so without a lookup.
	lengths  uint64
	patterns []kindPattern
}

type kindPattern struct {
	pieces []string // the pattern cut at its stars
	kind   keyKind
}

// newKeyKinds compiles the deletions, idempotency keys and message attributes.
func newKeyKinds(deletes, idempotencyKeys, messages []string) keyKinds {
	m := keyKinds{exact: map[string]keyKind{}}
	for kind, keys := range map[keyKind][]string{kindDelete: deletes, kindIdempotencyKey: idempotencyKeys, kindMessage: messages} {
		for _, k := range keys {
			if strings.Contains(k, "*") {
				m.patterns = append(m.patterns, kindPattern{strings.Split(k, "*"), kind})
			} else {
				m.exact[k] |= kind
				m.lengths |= 1 << min(len(k), 63)
			}
		}
	}
	return m
}

// of returns the lists key is on.
func (m *keyKinds) of(key string) keyKind {
	var kind keyKind
	if m.lengths&(1<<min(len(key), 63)) != 0 {
		kind = m.exact[key]
	}
	for _, p := range m.patterns {
		if kind&p.kind == 0 && globMatch(p.pieces, key) {
			kind |= p.kind
		}
	}
	return kind
}

// globMatch matches k against a pattern cut at its stars: the first piece is a prefix, the
// last a suffix, the others appear in order between.
func globMatch(pieces []string, k string) bool {
	if !strings.HasPrefix(k, pieces[0]) {
		return false
	}
	k = k[len(pieces[0]):]
	last := pieces[len(pieces)-1]
	for _, p := range pieces[1 : len(pieces)-1] {
		i := strings.Index(k, p)
		if i < 0 {
			return false
		}
		k = k[i+len(p):]
	}
	return len(k) >= len(last) && strings.HasSuffix(k, last)
}

// payloadKeys are the tool spans' payload attributes; a key is one, or a flattened form of
// one (key.a.b), when it or a prefix of it ending before a dot is in the set. Only
// prefixes as long as some payload key are looked up.
type payloadKeys struct {
	set map[string]bool
	// lengths has bit n set when a key of n bytes is in the set (longer ones: bit 63).
	lengths uint64
}

func newPayloadKeys(keys []string) payloadKeys {
	p := payloadKeys{set: set(keys...)}
	for _, k := range keys {
		p.lengths |= 1 << min(len(k), 63)
	}
	return p
}

func (p payloadKeys) has(k string) bool {
	if p.lengths&(1<<min(len(k), 63)) != 0 && p.set[k] {
		return true
	}
	for i := len(k) - 1; i > 0; i-- {
		if k[i] == '.' && p.lengths&(1<<min(i, 63)) != 0 && p.set[k[:i]] {
			return true
		}
	}
	return false
}
