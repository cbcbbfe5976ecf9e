package stalecache

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// A stale read can be decided before the trace it copied: the suspect's result is not in
// the memory yet when its trace is analysed. The memory then holds the suspect for a
// bounded window, and the sighting that would have matched it, remembered later, resolves
// it instead. A suspect is checked and held, and a sighting remembered and matched, under
// the lock of the fingerprint's stripe, so no order of the two misses the match.

// Suspect is an attempt that looks like a stale read — ok right after a failure and far
// faster than its siblings — whose result no other trace showed at least min_age earlier.
type Suspect struct {
	Fingerprint uint64
	Start       pcommon.Timestamp
	Trace       pcommon.TraceID
	// Report is the holder's: what reporting the finding takes. The memory only keeps it.
	Report any
}

// Match is a suspect resolved by a sighting: First in FirstTrace.
type Match struct {
	Suspect    Suspect
	First      pcommon.Timestamp
	FirstTrace pcommon.TraceID
}

// Held is what Hold did with a suspect.
type Held struct {
	// Matched: a sighting already remembered resolves the suspect, which is not held.
	Matched bool
	Match   Match
	// Held: the suspect is held for Window.
	Held bool
	// Expired counts suspects of its stripe whose window had passed unresolved, Evicted
	// those forgotten before it to make room.
	Expired, Evicted int
}

// HoldSuspects turns holding on: a suspect is held for cfg.RecheckWindow, measured on now,
// and at most cfg.HeldSuspects at once, split evenly over the stripes (the oldest of a
// full stripe is forgotten first). It must be called before the memory is shared; with a
// window or a bound of 0 nothing is held and Hold only checks.
func (m *Memory) HoldSuspects(cfg Config, now func() time.Time) {
	m.cfg, m.now = cfg, now
	if cfg.RecheckWindow <= 0 || cfg.HeldSuspects <= 0 || now == nil {
		return
	}
	per := max((cfg.HeldSuspects+stripes-1)/stripes, 1)
	for i := range m.stripe {
		m.stripe[i].held = &heldTable{ring: make([]heldSuspect, per), byFingerprint: map[uint64][]int32{}}
	}
}

// Hold checks a suspect against the sightings remembered so far and, when none resolves
// it, holds it until a sighting does (Remember returns the match then) or its window ends.
func (m *Memory) Hold(s Suspect) Held {
	var out Held
	st, b, p := m.locateStripe(s.Fingerprint)
	st.mu.Lock()
	defer st.mu.Unlock()
	if b.find(p) == 0 && b[0].trace != s.Trace && m.cfg.SeenEarlier(b[0].at, s.Start) {
		out.Matched, out.Match = true, Match{Suspect: s, First: b[0].at, FirstTrace: b[0].trace}
		return out
	}
	if st.held == nil {
		return out
	}
	now := m.now().UnixNano()
	out.Expired = st.held.expire(now)
	s.Fingerprint = p
	out.Evicted = st.held.push(s, now+m.cfg.RecheckWindow.Nanoseconds())
	out.Held = true
	return out
}

// Expire lets go of the suspects whose window has passed and returns how many, so they
// are counted when they end, not when their stripe is next used.
func (m *Memory) Expire() int {
	if m.now == nil {
		return 0
	}
	now := m.now().UnixNano()
	n := 0
	for i := range m.stripe {
		st := &m.stripe[i]
		if st.held == nil {
			continue
		}
		st.mu.Lock()
		n += st.held.expire(now)
		st.mu.Unlock()
	}
	return n
}

// HeldSuspects is the number of suspects held now.
func (m *Memory) HeldSuspects() int {
	n := 0
	for i := range m.stripe {
		st := &m.stripe[i]
		st.mu.Lock()
		if st.held != nil {
			for _, h := range st.held.ring {
				if h.live {
					n++
				}
			}
		}
		st.mu.Unlock()
	}
	return n
}

// heldTable is one stripe's suspects: a ring in the order they were held (so by the end
// of their window), indexed by fingerprint.
type heldTable struct {
	ring          []heldSuspect
	head, n       int
	byFingerprint map[uint64][]int32
}

type heldSuspect struct {
	s     Suspect
	until int64 // unix nanoseconds
	live  bool  // false once resolved: the slot waits to be popped
}

// push holds s until the given instant and returns 1 when the oldest had to be forgotten
// to make room.
func (t *heldTable) push(s Suspect, until int64) int {
	evicted := 0
	if t.n == len(t.ring) {
		if t.ring[t.head].live {
			evicted = 1
		}
		t.pop()
	}
	i := (t.head + t.n) % len(t.ring)
	t.ring[i] = heldSuspect{s: s, until: until, live: true}
	t.n++
	t.byFingerprint[s.Fingerprint] = append(t.byFingerprint[s.Fingerprint], int32(i))
	return evicted
}

// expire pops the suspects whose window ended by now (and resolved ones in front of
// them), returning how many were still unresolved.
func (t *heldTable) expire(now int64) int {
	expired := 0
	for t.n > 0 && (!t.ring[t.head].live || t.ring[t.head].until < now) {
		if t.ring[t.head].live {
			expired++
		}
		t.pop()
	}
	return expired
}

func (t *heldTable) pop() {
	h := &t.ring[t.head]
	if h.live {
		t.unlink(h.s.Fingerprint, int32(t.head))
	}
	*h = heldSuspect{}
	t.head = (t.head + 1) % len(t.ring)
	t.n--
}

func (t *heldTable) unlink(fingerprint uint64, slot int32) {
	slots := t.byFingerprint[fingerprint]
	for j, i := range slots {
		if i == slot {
			slots = append(slots[:j], slots[j+1:]...)
			break
		}
	}
	if len(slots) == 0 {
		delete(t.byFingerprint, fingerprint)
		return
	}
	t.byFingerprint[fingerprint] = slots
}

// resolve returns the live suspects of fingerprint, in another trace than the sighting's and
// that the sighting counts as cached for (cfg.SeenEarlier), and lets them go.
func (t *heldTable) resolve(fingerprint uint64, at pcommon.Timestamp, trace pcommon.TraceID, cfg *Config, now int64) []Match {
	slots := t.byFingerprint[fingerprint]
	if len(slots) == 0 {
		return nil
	}
	var out []Match
	keep := slots[:0]
	for _, i := range slots {
		h := &t.ring[i]
		if h.live && h.until >= now && h.s.Trace != trace && cfg.SeenEarlier(at, h.s.Start) {
			out = append(out, Match{Suspect: h.s, First: at, FirstTrace: trace})
			h.live, h.s.Report = false, nil
			continue
		}
		keep = append(keep, i)
	}
	if len(keep) == 0 {
		delete(t.byFingerprint, fingerprint)
	} else {
		t.byFingerprint[fingerprint] = keep
	}
	return out
}
