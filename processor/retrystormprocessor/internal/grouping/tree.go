// Package grouping builds a trace's span tree and groups tool attempts into logical calls
// and agent-level chains (ANALYSIS.md, "Grouping").
package grouping // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"

import (
	"iter"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// Node is one span of the tree. Parent is -1 for a root, for a span whose parent is not in
// the trace, and for a self-parent.
type Node struct {
	Span     ptrace.Span
	Resource pcommon.Resource
	// Scope is the instrumentation scope the span was sent under.
	Scope  pcommon.InstrumentationScope
	Parent int32
	// Agent marks an agent span; it is set on the first call of Tree.Agent.
	Agent bool
	// Mark is a note the indexer made about the span when it arrived (the analysis
	// package's recognition), 0 when it made none.
	Mark uint8
}

// Arrival is what a shard noted of a span as it arrived, while the span was in the CPU's
// caches: its ids and its Mark (Node.Mark). A tree indexed from arrivals reads neither
// from the span, which a trace decided seconds later would fetch from memory.
type Arrival struct {
	ID, Parent pcommon.SpanID
	Mark       uint8
}

// Tree indexes one trace's spans. Walks up the tree are bounded by the span count, so
// parent cycles end them instead of looping.
type Tree struct {
	Nodes []Node
	// DuplicateSpanIDs counts spans whose id repeated an earlier span's; they are kept
	// as nodes but cannot be parents.
	DuplicateSpanIDs int
	// CutCycles counts parent cycles broken by making one span of each cycle a root.
	CutCycles int
	// Rest says the spans are the rest of a trace part of which was decided before
	// (memory pressure, trace_bytes): the model outputs that made some of its tool
	// requests may have gone with that part, and only later inputs' history records them.
	Rest       bool
	byID       map[pcommon.SpanID]int32
	childStart []int32
	children   []int32
	// IsAgent recognises an agent span (recognition.agent_spans); nil: there are none,
	// and a span's agent is the top of its ancestor chain. Set before the first Agent.
	IsAgent func(ptrace.Span) bool
	// agentsMarked is set once Node.Agent holds (markAgents).
	agentsMarked bool
	// fill, state and path are link's scratch space.
	fill  []int32
	state []uint8
	path  []int32
}

// NewTree indexes every span of td.
func NewTree(td ptrace.Traces) *Tree {
	t := &Tree{}
	t.Reset(td)
	return t
}

// Reset makes t index td instead, reusing t's storage: a tree is built for every trace,
// and most are dropped moments later.
func (t *Tree) Reset(td ptrace.Traces) {
	t.ResetSpans(td.SpanCount(), tracespans.All(td), nil)
}

// ResetSpans is Reset on the n spans spans yields, each with its origin, wherever they
// are held. arrivals, when it holds one Arrival per span in the same order, gives the
// spans' ids and marks; otherwise they are read from the spans.
func (t *Tree) ResetSpans(n int, spans iter.Seq2[tracespans.Origin, ptrace.Span], arrivals []Arrival) {
	clear(t.Nodes)
	t.Nodes = t.Nodes[:0]
	if cap(t.Nodes) < n {
		t.Nodes = make([]Node, 0, n)
	}
	if t.byID == nil {
		t.byID = make(map[pcommon.SpanID]int32, n)
	} else {
		clear(t.byID)
	}
	t.DuplicateSpanIDs, t.CutCycles, t.agentsMarked, t.Rest = 0, 0, false, false
	if len(arrivals) != n {
		arrivals = nil
	}
	for o, span := range spans {
		if i := len(t.Nodes); i < len(arrivals) {
			t.add(span, o, arrivals[i].ID, arrivals[i].Mark)
		} else {
			t.add(span, o, span.SpanID(), 0)
		}
	}
	if len(arrivals) != len(t.Nodes) {
		arrivals = nil
	}
	t.link(arrivals)
}

// Release drops t's references to the spans it indexed, keeping its storage for Reset.
func (t *Tree) Release() {
	clear(t.Nodes)
	t.Nodes = t.Nodes[:0]
	clear(t.byID)
}

func (t *Tree) add(span ptrace.Span, o tracespans.Origin, id pcommon.SpanID, mark uint8) {
	idx := int32(len(t.Nodes))
	t.Nodes = append(t.Nodes, Node{Span: span, Resource: o.Resource, Scope: o.Scope, Parent: -1, Mark: mark})
	if _, dup := t.byID[id]; dup {
		t.DuplicateSpanIDs++
		return
	}
	t.byID[id] = idx
}

// link resolves parents, from arrivals when not nil, and lays the children out in one
// array (CSR), two allocations for the whole tree instead of one per node.
func (t *Tree) link(arrivals []Arrival) {
	counts := resize(t.childStart, len(t.Nodes)+1)
	for i := range t.Nodes {
		var pid pcommon.SpanID
		if arrivals != nil {
			pid = arrivals[i].Parent
		} else {
			pid = t.Nodes[i].Span.ParentSpanID()
		}
		if pid.IsEmpty() {
			continue
		}
		p, ok := t.byID[pid]
		if !ok || p == int32(i) {
			continue
		}
		t.Nodes[i].Parent = p
	}
	t.cutCycles()
	for i := range t.Nodes {
		if p := t.Nodes[i].Parent; p >= 0 {
			counts[p+1]++
		}
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	t.childStart = counts
	t.children = resize(t.children, int(counts[len(counts)-1]))
	fill := resize(t.fill, len(t.Nodes))
	for i := range t.Nodes {
		if p := t.Nodes[i].Parent; p >= 0 {
			t.children[counts[p]+fill[p]] = int32(i)
			fill[p]++
		}
	}
	t.fill = fill
}

// resize returns s with length n, zeroed, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// cutCycles walks the parent links (each span has at most one parent, so every cycle is
// found by following them) and cuts the link that closes each cycle, in O(spans).
func (t *Tree) cutCycles() {
	const (
		unseen = iota
		onPath
		done
	)
	state := resize(t.state, len(t.Nodes))
	path := t.path[:0]
	defer func() { t.state, t.path = state, path[:0] }()
	for i := range t.Nodes {
		path = path[:0]
		cur := int32(i)
		for cur >= 0 && state[cur] == unseen {
			state[cur] = onPath
			path = append(path, cur)
			cur = t.Nodes[cur].Parent
		}
		if cur >= 0 && state[cur] == onPath {
			t.Nodes[path[len(path)-1]].Parent = -1
			t.CutCycles++
		}
		for _, n := range path {
			state[n] = done
		}
	}
}

// Index returns the node index of a span id.
func (t *Tree) Index(id pcommon.SpanID) (int32, bool) {
	i, ok := t.byID[id]
	return i, ok
}

// Children returns the children of node i.
func (t *Tree) Children(i int32) []int32 {
	return t.children[t.childStart[i]:t.childStart[i+1]]
}

// Agent returns the nearest strict ancestor of i that is an agent span, else the top of
// i's ancestor chain (the trace root when it is present), or -1 when i has no ancestor in
// the trace (an orphan whose parent never arrived).
func (t *Tree) Agent(i int32) int32 {
	t.markAgents()
	top := int32(-1)
	cur := t.Nodes[i].Parent
	for steps := 0; cur >= 0 && steps < len(t.Nodes); steps++ {
		if t.Nodes[cur].Agent {
			return cur
		}
		top = cur
		cur = t.Nodes[cur].Parent
	}
	return top
}

// AgentRun returns the first agent span with agent's name under agent's parent (agent
// itself when it is the first), or agent when it is no agent span: the turns of one agent
// a framework opens a span for each of are one agent run.
func (t *Tree) AgentRun(agent int32) int32 {
	if agent < 0 || !t.Nodes[agent].Agent {
		return agent
	}
	name, parent := t.Nodes[agent].Span.Name(), t.Nodes[agent].Parent
	if parent < 0 {
		return agent
	}
	first := agent
	for _, sib := range t.Children(parent) {
		if n := &t.Nodes[sib]; n.Agent && sib != agent && n.Span.Name() == name &&
			n.Span.StartTimestamp() < t.Nodes[first].Span.StartTimestamp() {
			first = sib
		}
	}
	return first
}

// markAgents sets Node.Agent, once per tree: only the full analysis asks for agents, so
// triage never pays for reading every span's operation name.
func (t *Tree) markAgents() {
	if t.agentsMarked {
		return
	}
	t.agentsMarked = true
	if t.IsAgent == nil {
		return
	}
	for i := range t.Nodes {
		t.Nodes[i].Agent = t.IsAgent(t.Nodes[i].Span)
	}
}

// IsAncestor reports whether a is a strict ancestor of d.
func (t *Tree) IsAncestor(a, d int32) bool {
	if a < 0 || d < 0 {
		return false
	}
	cur := t.Nodes[d].Parent
	for steps := 0; cur >= 0 && steps < len(t.Nodes); steps++ {
		if cur == a {
			return true
		}
		cur = t.Nodes[cur].Parent
	}
	return false
}

// Depth counts i's ancestors, bounded by the span count; -1 for no node.
func (t *Tree) Depth(i int32) int {
	if i < 0 {
		return -1
	}
	d := 0
	for cur := t.Nodes[i].Parent; cur >= 0 && d < len(t.Nodes); cur = t.Nodes[cur].Parent {
		d++
	}
	return d
}
