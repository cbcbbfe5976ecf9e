package agenttraffic

import (
	"fmt"
	"slices"
	"time"
)

// staleAge is how much earlier than its stale trace a warm trace runs on the planned clock:
// above the processor's default stale_cache.min_age (1m).
const staleAge = 2 * time.Minute

// Generator produces planned traces one at a time. It is deterministic for a Config and not
// safe for concurrent use: one goroutine draws, any number may emit what it returns.
type Generator struct {
	cfg    Config
	g      *rng
	slot   int
	forced []Scenario
	// pending holds the rest of a stale_cache draw, in the order Next returns them.
	pending []Trace
}

// NewGenerator validates cfg and returns a generator seeded with cfg.Seed.
func NewGenerator(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("configure agent traffic: %w", err)
	}
	cfg = cfg.withDefaults()
	gen := &Generator{cfg: cfg, g: newRNG(cfg.Seed)}
	if cfg.EveryScenario {
		gen.forced = AllScenarios()
	}
	return gen, nil
}

// Next returns the next trace. A stale_cache draw yields Config.StalePairs pairs of traces,
// returned by this call and the following ones: a warm trace (a clean trace whose read
// returns the result live, timed staleAge earlier) and the stale trace itself. One pair
// comes warm trace first; several come interleaved (stalePairs).
func (gen *Generator) Next() Trace {
	if len(gen.pending) > 0 {
		t := gen.pending[0]
		gen.pending = gen.pending[1:]
		return t
	}
	sc := gen.drawScenario()
	shape := pick(gen.g, gen.cfg.shapesFor(sc))
	if sc != ScenarioStaleCache {
		return gen.build(shape, sc, gen.nextStart(), nil)
	}
	group := gen.stalePairs(shape)
	gen.pending = group[1:]
	return group[0]
}

// stalePairs plans the pairs of one stale_cache draw, the first in shape and the others in
// shapes drawn for them. Their traces come in a shuffled order in which the first pair's
// stale trace precedes its warm trace, so a run holds stale reads that arrive before, after
// and among the traces they copied (each trace has its own id, so they fall on different
// shards). One pair draws nothing more than it always did: warm trace, then stale trace.
func (gen *Generator) stalePairs(shape Shape) []Trace {
	n := gen.cfg.StalePairs
	group := make([]Trace, 0, 2*n)
	for i := range n {
		if i > 0 {
			shape = pick(gen.g, gen.cfg.shapesFor(ScenarioStaleCache))
		}
		warmSlot := gen.nextStart()
		read := newStaleRead(gen.g)
		stale := gen.build(shape, ScenarioStaleCache, gen.nextStart(), read)
		warm := gen.build(shape, ScenarioClean, warmSlot.Add(-staleAge), read)
		warm.Truth.WarmFor = stale.Truth.TraceID
		group = append(group, warm, stale)
	}
	if n == 1 {
		return group
	}
	warm0, stale0 := group[0].Truth.TraceID, group[1].Truth.TraceID
	gen.g.r.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
	w := slices.IndexFunc(group, func(t Trace) bool { return t.Truth.TraceID == warm0 })
	st := slices.IndexFunc(group, func(t Trace) bool { return t.Truth.TraceID == stale0 })
	if w < st {
		group[w], group[st] = group[st], group[w]
	}
	return group
}

// Pending reports whether Next holds more traces of a stale_cache draw; a bounded run sends
// them too, so no warm trace goes out without its stale trace.
func (gen *Generator) Pending() bool { return len(gen.pending) > 0 }

// Generate returns at least n traces: n, or more when the last draw was a stale_cache
// draw, whose pairs are all returned.
func (gen *Generator) Generate(n int) []Trace {
	out := make([]Trace, 0, n+1)
	for len(out) < n || gen.Pending() {
		out = append(out, gen.Next())
	}
	return out
}

func (gen *Generator) nextStart() time.Time {
	t := gen.cfg.Base.Add(time.Duration(gen.slot) * gen.cfg.Interval)
	gen.slot++
	return t
}

func (gen *Generator) drawScenario() Scenario {
	if len(gen.forced) > 0 {
		sc := gen.forced[0]
		gen.forced = gen.forced[1:]
		return sc
	}
	total := 0.0
	for _, sc := range AllScenarios() {
		total += gen.cfg.Scenarios[sc]
	}
	x := gen.g.r.Float64() * total
	for _, sc := range AllScenarios() {
		w := gen.cfg.Scenarios[sc]
		if x < w {
			return sc
		}
		x -= w
	}
	// Reached when every weight is 0 (an every-scenario run with no mix) or through float
	// rounding at the upper edge.
	return ScenarioClean
}

// build plans, renders and judges one trace. stale is the stale_cache read: the stale trace
// injects it, the warm trace (scenario clean) plans it as one of its clean calls.
func (gen *Generator) build(shape Shape, sc Scenario, start time.Time, stale *staleRead) Trace {
	var id TraceID
	gen.g.fill(id[:])
	pl := newPlanner(gen.g, shape, sc)
	if stale != nil {
		pl.seenArgs[stale.tool.name+"\x00"+jsonText(stale.args)] = true
	}
	if sc == ScenarioClean {
		pl.cleanSteps(gen.cfg.ToolsPerTrace)
		if stale != nil {
			pl.single(pl.warmCall(stale))
		}
	} else {
		pl.cleanSteps(max(gen.cfg.ToolsPerTrace-1, 0))
		pl.inject(sc, stale)
		pl.noRecallAfterFailure()
	}
	pl.citeCleanAssets()
	pl.withoutApplicationKeys()
	spans := render(gen.g, pl.plan, start, !gen.cfg.withoutCopies)
	return Trace{ID: id, Service: gen.cfg.Service, Scope: pl.traits.scope, Spans: spans,
		Truth: deriveTruth(pl.plan, id, spans)}
}
