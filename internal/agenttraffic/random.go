package agenttraffic

import (
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// rng wraps the generator's seeded source with the draws the planner needs. Everything random
// in a run comes from one rng, so one seed yields one run.
type rng struct{ r *rand.Rand }

func newRNG(seed uint64) *rng {
	// The second PCG word is a fixed odd constant so seed 0 is as good as any other.
	return &rng{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

func (g *rng) intn(n int) int         { return g.r.IntN(n) }
func (g *rng) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }
func (g *rng) chance(p float64) bool  { return g.r.Float64() < p }
func (g *rng) ms(lo, hi int) time.Duration {
	return time.Duration(g.between(lo, hi)) * time.Millisecond
}

func pick[T any](g *rng, xs []T) T { return xs[g.r.IntN(len(xs))] }

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (g *rng) token(n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(alnum[g.r.IntN(len(alnum))])
	}
	return b.String()
}

func (g *rng) digits(n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(byte('0' + g.r.IntN(10)))
	}
	return b.String()
}

func (g *rng) hex(n int) string {
	const hexdigits = "0123456789abcdef"
	var b strings.Builder
	for range n {
		b.WriteByte(hexdigits[g.r.IntN(16)])
	}
	return b.String()
}

// fill fills b with random bytes, never all zero (a zero id is invalid in OTLP).
func (g *rng) fill(b []byte) {
	for {
		nonZero := false
		for i := range b {
			b[i] = byte(g.r.UintN(256))
			nonZero = nonZero || b[i] != 0
		}
		if nonZero {
			return
		}
	}
}

var words = strings.Fields(`order invoice refund shipment carrier warehouse delay customer
account balance ledger transfer payment capture settlement dispute policy region latency
schema table partition freshness replica snapshot pipeline report quarter revenue margin
forecast supplier contract renewal escalation ticket priority outage retry budget quota`)

// sentence returns n plausible words: payload text of realistic size without real content.
func (g *rng) sentence(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = pick(g, words)
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortStrings(xs []string) []string {
	sort.Strings(xs)
	return xs
}

// jsonText renders a payload; encoding/json sorts map keys, which keeps runs deterministic.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // payloads are built from JSON-safe values only
	}
	return string(b)
}
