package grouping

import (
	"cmp"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Attempt is a tool attempt placed in the tree.
type Attempt struct {
	toolspan.Attempt
	Node int32
	// Logical is the node of the tool span this attempt is nested under, or -1.
	Logical int32
	// Agent is the node of the nearest agent ancestor, else of the top of the ancestor chain.
	Agent int32
	// AgentRun is Agent, or the first of the agent spans with Agent's name under Agent's
	// parent: a framework that opens one agent span per turn (AG2's generate_reply) runs
	// one agent in them. Chains and recoveries are per agent run.
	AgentRun int32
	Sends    []toolspan.Send
	// Order is the attempt's number inside its call after ordering (1-based).
	Order int
}

// Call is one logical tool call: all attempts of one intended invocation.
type Call struct {
	Key string
	// Degraded is true when no call id was present and the fallback key grouped it.
	Degraded bool
	Attempts []*Attempt
	// Duplicates are records of the same call id made at an outer agent level; they are
	// reported as nested_duplicate and not counted as attempts.
	Duplicates []*Attempt
	// NumberIssue describes skipped or repeated explicit attempt numbers, "" when none.
	NumberIssue string
}

// Last returns the call's last attempt.
func (c *Call) Last() *Attempt { return c.Attempts[len(c.Attempts)-1] }

// Failed reports whether the call ended in failure (error or timeout).
func (c *Call) Failed() bool { return c.Last().Status.Failed() }

// Start is the first attempt's start.
func (c *Call) Start() pcommon.Timestamp {
	s := c.Attempts[0].Start
	for _, a := range c.Attempts[1:] {
		s = min(s, a.Start)
	}
	return s
}

// Calls groups attempts into logical calls: nested attempts by their logical tool span,
// the rest by call id, and attempts without one by the fallback key (parent span id,
// tool name, args hash). Calls come out ordered by start.
func Calls(t *Tree, attempts []*Attempt) []*Call {
	byKey := make(map[string]*Call, len(attempts))
	var order []*Call
	for _, a := range attempts {
		key, degraded := callKey(t, a)
		c, ok := byKey[key]
		if !ok {
			c = &Call{Key: key, Degraded: degraded}
			byKey[key] = c
			order = append(order, c)
		}
		c.Attempts = append(c.Attempts, a)
	}
	for _, c := range order {
		splitNestedDuplicates(t, c)
		orderAttempts(c)
		markMissingOutcome(c)
	}
	slices.SortStableFunc(order, func(a, b *Call) int { return cmp.Compare(a.Start(), b.Start()) })
	return order
}

// Identity is what makes attempts one call: the call id, or for the degraded fallback the
// parent span, tool name and args hash (or, for attempts nested under a logical span
// without a call id, that span). Calls groups by Key(): two different identities can spell
// one key (a tool name holding ':', a call id spelled like a fallback key), so compare
// keys, not identities.
type Identity struct {
	ID       string
	Degraded bool
	Parent   pcommon.SpanID
	Tool     string
	// Args is the short args hash of a fallback key; Logical the logical span's id.
	Args    string
	Logical pcommon.SpanID
}

// Identify returns a's identity.
func Identify(t *Tree, a *Attempt) Identity {
	if a.Logical >= 0 {
		// The logical span's own fields name the call; its children are the attempts.
		lspan := t.Nodes[a.Logical].Span
		if id, ok := lspan.Attributes().Get(logicalCallIDKey(lspan.Attributes())); ok && id.AsString() != "" {
			return Identity{ID: id.AsString()}
		}
		return Identity{Degraded: true, Parent: lspan.ParentSpanID(), Tool: a.ToolName, Logical: lspan.SpanID()}
	}
	if a.CallID != "" {
		return Identity{ID: a.CallID}
	}
	return Identity{Degraded: true, Parent: a.ParentID, Tool: a.ToolName, Args: shortHash(a.ArgsHash)}
}

// Key is the identity as the call key records carry.
func (k Identity) Key() string {
	switch {
	case !k.Degraded:
		return k.ID
	case !k.Logical.IsEmpty():
		return fmt.Sprintf("fallback:%s:%s:%s", k.Parent, k.Tool, k.Logical)
	}
	return fmt.Sprintf("fallback:%s:%s:%s", k.Parent, k.Tool, k.Args)
}

func callKey(t *Tree, a *Attempt) (string, bool) {
	k := Identify(t, a)
	return k.Key(), k.Degraded
}

// logicalCallIDKey finds the call id attribute of a logical span. The common sources
// are enough here: a logical span is an execute_tool-style wrapper.
func logicalCallIDKey(attrs pcommon.Map) string {
	for _, k := range []string{"gen_ai.tool.call.id", "tool_use_id", "tool.id", "ai.toolCall.id", "span_id"} {
		if _, ok := attrs.Get(k); ok {
			return k
		}
	}
	return ""
}

func shortHash(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

// splitNestedDuplicates keeps, of a call id recorded under two agent levels, the records
// of the deepest agent (where the work ran) and moves the records made under its
// ancestor agents to Duplicates (ANALYSIS.md, "Grouping", rule 5). Records under unrelated agents, or orphans
// whose parent never arrived, stay attempts: that is not two levels of one call.
func splitNestedDuplicates(t *Tree, c *Call) {
	if c.Degraded || len(c.Attempts) < 2 {
		return
	}
	deepest, depth := c.Attempts[0].Agent, t.Depth(c.Attempts[0].Agent)
	same := true
	for _, a := range c.Attempts[1:] {
		if a.Agent != deepest {
			same = false
		}
		if d := t.Depth(a.Agent); d > depth {
			deepest, depth = a.Agent, d
		}
	}
	if same {
		return
	}
	kept := c.Attempts[:0:0]
	for _, a := range c.Attempts {
		if a.Agent != deepest && t.IsAncestor(a.Agent, deepest) {
			c.Duplicates = append(c.Duplicates, a)
		} else {
			kept = append(kept, a)
		}
	}
	c.Attempts = kept
}

// orderAttempts sorts by explicit attempt number when every attempt carries a valid one,
// else by start time, and records skipped or repeated numbers.
func orderAttempts(c *Call) {
	explicit := true
	for _, a := range c.Attempts {
		if !a.Number.Set || a.Number.Invalid {
			explicit = false
		}
	}
	byStart := func(a, b *Attempt) int {
		if r := cmp.Compare(a.Start, b.Start); r != 0 {
			return r
		}
		return cmp.Compare(a.Node, b.Node)
	}
	if explicit {
		slices.SortStableFunc(c.Attempts, func(a, b *Attempt) int {
			if r := cmp.Compare(a.Number.Value, b.Number.Value); r != 0 {
				return r
			}
			return byStart(a, b)
		})
	} else {
		slices.SortStableFunc(c.Attempts, byStart)
	}
	for i, a := range c.Attempts {
		a.Order = i + 1
	}
	c.NumberIssue = numberIssue(c.Attempts)
}

// numberIssue checks the explicit numbers that are present: they must run 1, 2, 3….
func numberIssue(attempts []*Attempt) string {
	var nums []int64
	for _, a := range attempts {
		if a.Number.Set && !a.Number.Invalid {
			nums = append(nums, a.Number.Value)
		}
	}
	if len(nums) == 0 {
		return ""
	}
	slices.Sort(nums)
	for i := 1; i < len(nums); i++ {
		if nums[i] == nums[i-1] {
			return fmt.Sprintf("attempt %d recorded more than once", nums[i])
		}
	}
	for i, n := range nums {
		if n != int64(i+1) {
			return fmt.Sprintf("attempt numbers %s skip %d", formatNumbers(nums), i+1)
		}
	}
	return ""
}

func formatNumbers(nums []int64) string {
	const most = 8
	s := ""
	for i, n := range nums {
		if i == most {
			return s + ",…"
		}
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(n)
	}
	return s
}

// markMissingOutcome makes an attempt unknown when it lacks the explicit outcome field
// that other attempts of its call carry: its outcome was not recorded.
func markMissingOutcome(c *Call) {
	carried := false
	for _, a := range c.Attempts {
		if a.ExplicitStatus {
			carried = true
			break
		}
	}
	if !carried {
		return
	}
	for _, a := range c.Attempts {
		if !a.ExplicitStatus {
			a.Status = outcome.Unknown
		}
	}
}
