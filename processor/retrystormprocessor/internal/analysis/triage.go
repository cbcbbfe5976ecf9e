package analysis

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/conversation"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// IndexedTrace is a trace as Index leaves it (its span tree) and as Triage then finds it: a
// first look that reads statuses, ids and flags but hashes nothing and decodes no payload.
type IndexedTrace struct {
	// Tree is the trace's span tree, reused by AnalyzeTree.
	Tree *grouping.Tree
	// Cached says the trace's spans were all read just now (they arrived in the input
	// being ingested), so the CPU's caches hold them and triage does not warm them first.
	Cached bool
	// Clean is true when Analyze would certainly find the trace clean: no storm, no non-ok
	// attempt, no finding, no error span. False means only "analyse to know".
	Clean bool
	// The fields below are set when Clean, with the values Analyze would report.
	Tools         []string
	ToolAttempts  int
	Calls         int
	DegradedCalls int
	// ClampedStarts and ClampedEnds count the attempts' times past toolspan.MaxTimestamp.
	ClampedStarts, ClampedEnds int
	// Unseen counts the tool calls the trace shows retry_storm could not see, set when
	// Clean, as Analyze would count them.
	Unseen map[UnseenKey]int
	// fingerprints holds the node and result fingerprint of each attempt with a result.
	fingerprints []resultFingerprint
	// stop names the step that ended a triage without proof, for tests.
	stop triageStop
}

// resultFingerprint is an attempt's result fingerprint, for RememberClean.
type resultFingerprint struct {
	node        int32
	fingerprint uint64
}

// triageScratch is the working space of Triage and AnalyzeTree, kept between traces: an
// Analyzer serves one goroutine.
type triageScratch struct {
	isTool       []bool
	toolKids     []int32
	attempts     []grouping.Attempt
	keys         map[string]int
	groups       map[groupKey]int
	tails        map[groupKey]struct{}
	hashed       map[groupKey]struct{}
	seen         []degradedAttempt
	degraded     []int
	idems        map[string]struct{}
	sends        map[int32]int
	fingerprints []resultFingerprint
	// warmth keeps warm's loads from being optimised away.
	warmth int
	// analysisIsTool, analysisLogical and analysisServer are AnalyzeTree's.
	analysisIsTool  []bool
	analysisLogical []bool
	analysisServer  []int32
	// executors and withResult are followTriage's.
	executors  []conversation.Executor
	withResult map[int32]bool
	// walk is descendantsCarrying's stack.
	walk []int32
	// matcher is followTriage's and follow's; candidateMatcher follow's second match.
	matcher, candidateMatcher conversation.Matcher
}

func newTriageScratch() triageScratch {
	return triageScratch{
		keys:   map[string]int{},
		groups: map[groupKey]int{},
		tails:  map[groupKey]struct{}{},
		hashed: map[groupKey]struct{}{},
		idems:  map[string]struct{}{},
		sends:  map[int32]int{},

		withResult: map[int32]bool{},
	}
}

// hashedFields are the completeness fields a glance does not read.
const hashedFields = toolspan.FieldArgsHash | toolspan.FieldResultHash | toolspan.FieldIdemHash

// Triageable reports whether the configuration lets a glance prove a trace clean: with a
// storm threshold of one every call is a storm, and a required hash field needs the hash.
func (an *Analyzer) Triageable() bool {
	return an.cfg.StormThreshold >= 2 && an.rules.Required&hashedFields == 0
}

// Triage looks at td the cheap way. It proves a trace clean only under conditions that
// make every rule of Analyze quiet, and answers "not proven" at the first thing that
// could make one speak:
//   - an error span, a cited asset no span read (unbacked_citation), a duplicate span id
//     or a parent cycle;
//   - a tool attempt whose glance is not a sure ok (error, timeout, unknown, or a result
//     that may carry an isError flag), that lacks a required field, or whose explicit
//     attempt number is not 1 (attempt_gap);
//   - two attempts under one call key (a storm, a nested duplicate, or, for fallback keys
//     read without the args hash, possibly one), or a logical span with two attempts;
//   - two external side effects under one idempotency key, or keys given both raw and
//     hashed;
//   - an attempt with storm_threshold HTTP sends below it (a transport storm).
//
// Without a failed attempt there are no agent-level chains, no unrecovered failure and no
// stale-cache read; with one attempt per call, no drift and no flip.
func (an *Analyzer) Triage(td ptrace.Traces) *IndexedTrace {
	return an.TriageIndexed(an.Index(td))
}

// TriageIndexed is Triage on a trace Index has indexed, an IndexedTrace not triaged yet. Its steps,
// each able to stop it without proof: the configuration and the tree; every span
// (recognizeSpans); the tool spans' nesting (countToolKids); each attempt at a glance
// (glanceAttempts); the attempts' call keys (oneAttemptPerCall); the HTTP sends (fewSends);
// the answer's citations (unbacked).
func (an *Analyzer) TriageIndexed(q *IndexedTrace) *IndexedTrace {
	t := q.Tree
	if !an.Triageable() || t.DuplicateSpanIDs > 0 || t.CutCycles > 0 {
		q.stop = stopTreeOrConfig
		return q
	}
	n := len(t.Nodes)
	sc := &an.scratch
	st := triageSpans{
		isTool:   slices.Grow(sc.isTool[:0], n)[:n],
		toolKids: slices.Grow(sc.toolKids[:0], n)[:n],
		attempts: sc.attempts[:0],
		// The fingerprints stay with q until Recycle hands them back.
		fingerprints: sc.fingerprints[:0],
	}
	sc.fingerprints = nil
	clear(st.isTool)
	clear(st.toolKids)
	defer func() {
		// Keep the scratch space, but no references into this trace.
		clear(st.attempts)
		sc.isTool, sc.toolKids, sc.attempts = st.isTool, st.toolKids, st.attempts[:0]
		q.fingerprints = st.fingerprints
	}()
	if q.stop = an.triageSteps(q, &st); q.stop == "" {
		q.proveClean(st.attempts)
	}
	return q
}

// triageStop names the step that ended a triage without proof; "" is none.
type triageStop string

const (
	stopTreeOrConfig      triageStop = "configuration or tree"
	stopErrorSpan         triageStop = "error span"
	stopNestedAttempts    triageStop = "two nested attempts"
	stopUnsureAttempt     triageStop = "attempt not surely ok and complete"
	stopAttemptNumber     triageStop = "attempt number"
	stopSharedIdemKey     triageStop = "idempotency key"
	stopIdemRawAndHashed  triageStop = "idempotency keys raw and hashed"
	stopSharedCallKey     triageStop = "two attempts under one call key"
	stopSharedFallbackKey triageStop = "two fallback-keyed attempts under one key"
	stopTransportSends    triageStop = "transport sends"
	stopUnbackedCitation  triageStop = "unbacked citation"
)

// triageSpans is what the steps of one triage learn about the trace's spans, by node.
type triageSpans struct {
	isTool       []bool
	toolKids     []int32 // tool children of each tool span: one with any is logical
	attempts     []grouping.Attempt
	fingerprints []resultFingerprint
}

// triageSteps runs the steps after the tree's, in order, and returns the first stop.
func (an *Analyzer) triageSteps(q *IndexedTrace, st *triageSpans) triageStop {
	t := q.Tree
	cites, stop := an.recognizeSpans(t, st.isTool)
	if stop != "" {
		return stop
	}
	if stop := countToolKids(t, st); stop != "" {
		return stop
	}
	if !q.Cached {
		an.scratch.warmth += warm(t, st.isTool, st.toolKids)
	}
	if stop := an.glanceAttempts(t, st); stop != "" {
		return stop
	}
	if stop := an.oneAttemptPerCall(q, st.attempts); stop != "" {
		return stop
	}
	if stop := an.followTriage(q, st); stop != "" {
		return stop
	}
	if !an.fewSends(t, st.isTool, st.toolKids) {
		return stopTransportSends
	}
	if cites && an.unbacked(t) {
		return stopUnbackedCitation
	}
	return ""
}

// recognizeSpans marks the tool spans and stops at a span in status ERROR; cites says a
// span carries the cited-assets attribute.
func (an *Analyzer) recognizeSpans(t *grouping.Tree, isTool []bool) (cites bool, stop triageStop) {
	also := an.rules.CitedAssetsAttribute
	for i := range t.Nodes {
		if spanError(&t.Nodes[i]) {
			return cites, stopErrorSpan
		}
		var has bool
		isTool[i], has = an.recognize(&t.Nodes[i], also)
		if has {
			cites, also = true, ""
		}
	}
	return cites, ""
}

// countToolKids counts the tool children of each tool span, and stops at a logical span
// with two attempts.
func countToolKids(t *grouping.Tree, st *triageSpans) triageStop {
	for i := range t.Nodes {
		if p := t.Nodes[i].Parent; st.isTool[i] && p >= 0 && st.isTool[p] {
			if st.toolKids[p]++; st.toolKids[p] > 1 {
				return stopNestedAttempts
			}
		}
	}
	return ""
}

// glanceAttempts reads each attempt (a tool span without tool children) at a glance: it
// must be surely ok and complete, a first attempt, and no two external side effects may
// share an idempotency key. It collects the attempts and their result fingerprints.
func (an *Analyzer) glanceAttempts(t *grouping.Tree, st *triageSpans) triageStop {
	required := an.rules.Required
	idems := an.scratch.idems
	clear(idems)
	var hashedIdem, rawIdem bool
	for i := range t.Nodes {
		if !st.isTool[i] || st.toolKids[i] > 0 {
			continue
		}
		g := an.x.Glance(t.Nodes[i].Span)
		if !g.Sure || g.Status != outcome.OK || required&^g.Present != 0 {
			return stopUnsureAttempt
		}
		if g.Number.Set && !g.Number.Invalid && g.Number.Value != 1 {
			return stopAttemptNumber
		}
		if g.Idem != "" && g.SideEffect == "external" {
			if _, dup := idems[g.Idem]; dup {
				return stopSharedIdemKey
			}
			idems[g.Idem] = struct{}{}
			hashedIdem = hashedIdem || g.Idem[0] == 'h'
			rawIdem = rawIdem || g.Idem[0] == 'k'
			if hashedIdem && rawIdem {
				return stopIdemRawAndHashed // only hashing tells them apart
			}
		}
		if g.HasResult {
			st.fingerprints = append(st.fingerprints, resultFingerprint{node: int32(i), fingerprint: g.ResultFingerprint})
		}
		a := grouping.Attempt{Attempt: g.Attempt, Node: int32(i), Logical: -1}
		if p := t.Nodes[i].Parent; p >= 0 && st.isTool[p] {
			a.Logical = p
		}
		st.attempts = append(st.attempts, a)
	}
	return ""
}

// proveClean sets what a clean trace reports: one call per attempt.
func (q *IndexedTrace) proveClean(attempts []grouping.Attempt) {
	q.Clean = true
	q.ToolAttempts, q.Calls = len(attempts), len(attempts)
	q.ClampedStarts, q.ClampedEnds = 0, 0
	for i := range attempts {
		q.ClampedStarts, q.ClampedEnds = countClamped(&attempts[i].Attempt, q.ClampedStarts, q.ClampedEnds)
		if name := attempts[i].ToolName; !slices.Contains(q.Tools, name) {
			q.Tools = append(q.Tools, name)
		}
	}
}

// warm reads the first byte of every attribute key and string value of the attempts (tool
// spans without tool children) before the glances read them: a trace decided seconds after
// it arrived is out of the CPU's caches, and a glance is a chain of dependent loads that
// waits for each miss in turn, where these independent loads overlap. It returns a sum so
// the loads are kept.
func warm(t *grouping.Tree, isTool []bool, toolKids []int32) int {
	sum := 0
	for i := range t.Nodes {
		if !isTool[i] || toolKids[i] > 0 {
			continue
		}
		for k, v := range t.Nodes[i].Span.Attributes().All() {
			if len(k) > 0 {
				sum += int(k[0])
			}
			if v.Type() == pcommon.ValueTypeStr {
				if s := v.Str(); len(s) > 0 {
					sum += int(s[0])
				}
			}
		}
	}
	return sum
}

// unbacked reports an answer span citing an asset no span read. Triage has already seen
// every span succeed, so any span naming an asset read it successfully.
func (an *Analyzer) unbacked(t *grouping.Tree) bool {
	reads := findings.Reads{}
	for i := range t.Nodes {
		reads.Add(an.x.ReadAsset(t.Nodes[i].Span), true)
	}
	return len(findings.UnbackedCitations(&an.rules, t, reads)) > 0
}

// fewSends reports that no attempt has storm_threshold or more HTTP sends below it. A send
// belongs to its nearest tool ancestor, as in sends(): the walk down from an attempt stops
// at other tool spans.
func (an *Analyzer) fewSends(t *grouping.Tree, isTool []bool, toolKids []int32) bool {
	count := an.scratch.sends
	clear(count)
	for i := range t.Nodes {
		if isTool[i] || !transport(&t.Nodes[i]) {
			continue
		}
		cur := t.Nodes[i].Parent
		for steps := 0; cur >= 0 && !isTool[cur] && steps < len(t.Nodes); steps++ {
			cur = t.Nodes[cur].Parent
		}
		if cur < 0 || !isTool[cur] || toolKids[cur] > 0 {
			continue
		}
		if count[cur]++; count[cur] >= an.cfg.StormThreshold {
			return false
		}
	}
	return true
}
