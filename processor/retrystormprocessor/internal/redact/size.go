package redact

import "unsafe"

// Bytes is about what v takes on the heap as a decision cache holds it (unindexed): the
// fingerprints, the hashed texts with their hashes, where following found payloads. A
// decision cache bounds its memory by it.
func (v *Values) Bytes() int {
	if v == nil {
		return 0
	}
	n := int(unsafe.Sizeof(*v)) + cap(v.fingerprints)*int(unsafe.Sizeof(valueFingerprint{})) +
		cap(v.hashed)*int(unsafe.Sizeof(hashedText{}))
	for _, h := range v.hashed {
		n += len(h.hash)
	}
	if f := v.followed; f != nil {
		n += int(unsafe.Sizeof(*f))
		for _, keys := range [][]string{f.MessageKeys, f.PayloadKeys, f.Tools} {
			n += cap(keys) * int(unsafe.Sizeof(""))
			for _, k := range keys {
				n += len(k)
			}
		}
	}
	return n
}
