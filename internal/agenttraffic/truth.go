package agenttraffic

import (
	"slices"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// Layer names the outermost retry layer of a call (stormrecord's layer names).
type Layer string

// Layers.
const (
	LayerAgent     Layer = stormrecord.LayerAgent
	LayerExecutor  Layer = stormrecord.LayerExecutor
	LayerTransport Layer = stormrecord.LayerTransport
	LayerNone      Layer = stormrecord.LayerNone
)

// StormClass is a storm's class (the processor's ANALYSIS.md, "Layers, storms and classes").
type StormClass string

// Storm classes; "" for a call that is not a storm.
const (
	ClassTransientDependency StormClass = "transient_dependency"
	ClassChangedArguments    StormClass = "changed_arguments"
	ClassRetryAfterSuccess   StormClass = "retry_after_success"
	ClassExhausted           StormClass = "exhausted"
	ClassDuplicateSideEffect StormClass = "duplicate_side_effect"
)

// FindingKind is a divergence finding kind (the processor's ANALYSIS.md, "Findings").
type FindingKind string

// Finding kinds.
const (
	FindingUnrecoveredFailure  FindingKind = "unrecovered_failure"
	FindingResultDrift         FindingKind = "result_drift"
	FindingStaleCacheSuspect   FindingKind = "stale_cache_suspect"
	FindingDuplicateSideEffect FindingKind = "duplicate_side_effect"
	FindingUnresolvedAttempt   FindingKind = "unresolved_attempt"
	FindingAttemptGap          FindingKind = "attempt_gap"
	FindingNestedDuplicate     FindingKind = "nested_duplicate"
	FindingUnbackedCitation    FindingKind = "unbacked_citation"
	FindingIncompleteRecord    FindingKind = "incomplete_record"
)

// SamplingReason is why a correct retry_storm keeps a trace, in priority order.
type SamplingReason string

// Sampling reasons.
const (
	ReasonStorm      SamplingReason = "storm"
	ReasonToolError  SamplingReason = "tool_error"
	ReasonDivergence SamplingReason = "divergence"
	ReasonSpanError  SamplingReason = "span_error"
	ReasonIncomplete SamplingReason = "incomplete"
	ReasonClean      SamplingReason = "clean"
)

// ExpectedRecord is what a correct retry_storm reports for one logical call or agent-level
// chain. CallKey is the call id (the first call's for a chain); it is empty for shapes
// without call ids, where the processor derives a fallback key: match those on
// AttemptSpanIDs.
type ExpectedRecord struct {
	CallKey            string             `json:"call_key"`
	Tool               string             `json:"tool"`
	Attempts           int                `json:"attempts"`
	Layer              Layer              `json:"layer"`
	Layers             stormrecord.Layers `json:"layers"`
	Storm              bool               `json:"storm"`
	Class              StormClass         `json:"class"`
	Statuses           []AttemptStatus    `json:"statuses"`
	TransportStatuses  []AttemptStatus    `json:"transport_statuses,omitempty"`
	Findings           []FindingKind      `json:"findings"`
	IncompleteAttempts int                `json:"incomplete_attempts"`
	AttemptSpanIDs     []string           `json:"attempt_span_ids"`
}

// Truth is the ground truth of one trace: what the generator injected and what a correct
// retry_storm must report. Records list only calls that matter (storms, calls with a non-ok
// attempt, calls with findings); Calls counts all logical calls. Findings lists every
// expected finding, call-level ones and the trace-level unbacked_citation (which concerns
// the root span, so it is in no call record but in that span's finding record, one per
// trace however many assets it cites).
type Truth struct {
	TraceID      string           `json:"trace_id"`
	Shape        Shape            `json:"shape"`
	Scenario     Scenario         `json:"scenario"`
	Keep         bool             `json:"keep"`
	Reason       SamplingReason   `json:"reason"`
	Storms       int              `json:"storms"`
	Calls        int              `json:"calls"`
	ToolAttempts int              `json:"tool_attempts"`
	Spans        int              `json:"spans"`
	Findings     []FindingKind    `json:"findings"`
	Records      []ExpectedRecord `json:"records"`
	// Secrets are the raw values the trace sends: every leaf of a tool's arguments and
	// results (strings, and numbers as written) and every idempotency key, at least
	// minRawValue bytes long, wherever a span carries it (tool spans and their copies in
	// model, agent and HTTP spans). None may appear in any output once redaction is on.
	Secrets []string `json:"secrets,omitempty"`
	// WarmFor is set on a stale_cache scenario's warm-up trace: the id of the trace whose
	// cached answer it first returned.
	WarmFor string `json:"warm_for,omitempty"`
}

// logicalCall is a group of attempts a correct processor treats as one call.
type logicalCall struct {
	callID   string
	tool     *toolSpec
	asset    string
	nested   bool
	attempts []*plannedAttempt
}

func (c *logicalCall) last() *plannedAttempt { return c.attempts[len(c.attempts)-1] }

// deriveTruth applies the retry_storm semantics to a rendered plan.
func deriveTruth(p *plan, id TraceID, spans []Span) Truth {
	t := Truth{TraceID: id.String(), Shape: p.shape, Scenario: p.scenario, Spans: len(spans),
		Findings: []FindingKind{}, Records: []ExpectedRecord{}}
	calls := groupCalls(p)
	anyNonOK := false
	t.Calls = len(calls)
	traits := traitsOf(p.shape)
	for _, chain := range chainCalls(calls) {
		rec := expectRecord(chain, traits)
		t.ToolAttempts += rec.Attempts
		nonOK := false
		for _, s := range rec.Statuses {
			nonOK = nonOK || s != AttemptOK
		}
		anyNonOK = anyNonOK || nonOK
		if rec.Storm {
			t.Storms++
		}
		if rec.Storm || nonOK || len(rec.Findings) > 0 {
			t.Records = append(t.Records, rec)
			t.Findings = append(t.Findings, rec.Findings...)
		}
	}
	for _, asset := range p.citedAssets {
		if !assetBacked(calls, asset) {
			t.Findings = append(t.Findings, FindingUnbackedCitation)
		}
	}
	t.Reason = samplingReason(t, anyNonOK, spans)
	t.Keep = t.Reason != ReasonClean
	t.Secrets = sentRawValues(p, spans)
	return t
}

// groupCalls groups attempts by call key: the call id, else (parent, tool, args). A nested
// duplicate's second record is not an attempt: the call is counted once.
func groupCalls(p *plan) []*logicalCall {
	var out []*logicalCall
	byKey := map[string]*logicalCall{}
	for _, c := range p.calls() {
		for _, a := range c.attempts {
			key := c.callID
			if key == "" {
				key = a.parent.String() + "\x00" + c.tool.name + "\x00" + jsonText(a.args)
			}
			lc := byKey[key]
			if lc == nil {
				lc = &logicalCall{callID: c.callID, tool: c.tool, asset: c.asset}
				byKey[key] = lc
				out = append(out, lc)
			}
			lc.nested = lc.nested || c.nested
			lc.attempts = append(lc.attempts, a)
		}
	}
	return out
}

// chainCalls forms agent-level chains: consecutive calls below the agent with one tool and
// one args hash where each earlier call failed. Every call here runs below the root agent
// (a subagent only re-records a call), and calls are in start order.
func chainCalls(calls []*logicalCall) [][]*logicalCall {
	var chains [][]*logicalCall
	for _, c := range calls {
		if n := len(chains); n > 0 {
			prev := chains[n-1][len(chains[n-1])-1]
			// An attempt with no outcome (unknown) has not failed: nothing chains after it.
			failed := prev.last().status == AttemptError || prev.last().status == AttemptTimeout
			if failed && prev.tool == c.tool && jsonText(prev.attempts[0].args) == jsonText(c.attempts[0].args) {
				chains[n-1] = append(chains[n-1], c)
				continue
			}
		}
		chains = append(chains, []*logicalCall{c})
	}
	return chains
}

// expectRecord builds the record of one chain (a single call is a chain of one) recorded
// in a shape with the given traits.
func expectRecord(chain []*logicalCall, traits shapeTraits) ExpectedRecord {
	rec := ExpectedRecord{CallKey: chain[0].callID, Tool: chain[0].tool.name, Findings: []FindingKind{}}
	var attempts []*plannedAttempt
	nested := false
	maxSends := 0
	for _, c := range chain {
		attempts = append(attempts, c.attempts...)
		nested = nested || c.nested
	}
	for _, a := range attempts {
		rec.Statuses = append(rec.Statuses, a.status)
		counted := a.spanID
		if !a.countedID.IsZero() {
			counted = a.countedID
		}
		rec.AttemptSpanIDs = append(rec.AttemptSpanIDs, counted.String())
		for _, s := range a.sends {
			rec.TransportStatuses = append(rec.TransportStatuses, s.status())
		}
		maxSends = max(maxSends, len(a.sends))
		if a.drop != "" {
			rec.IncompleteAttempts++
		}
	}
	rec.Attempts = len(attempts)
	rec.Layers = stormrecord.Layers{Transport: len(rec.TransportStatuses), Executor: len(attempts), Agent: len(chain)}
	switch {
	case len(chain) >= 2:
		rec.Layer = LayerAgent
	case len(attempts) >= 2:
		rec.Layer = LayerExecutor
	case maxSends >= 2:
		rec.Layer = LayerTransport
	default:
		rec.Layer = LayerNone
	}
	rec.Storm = rec.Layer != LayerNone
	if rec.Layer == LayerTransport {
		rec.Class = classify(sendAttempts(attempts))
	} else if rec.Storm {
		rec.Class = classify(attempts)
	}
	gap := false
	for _, c := range chain {
		gap = gap || traits.attemptNumbers && numbersSkipOrRepeat(c)
	}
	rec.Findings = callFindings(attempts, findingFacts{nested: nested, gap: gap, results: traits.results})
	return rec
}

// sendAttempts views the wire sends of a transport-only storm as attempts, so one classifier
// serves both layers.
func sendAttempts(attempts []*plannedAttempt) []*plannedAttempt {
	var out []*plannedAttempt
	for _, a := range attempts {
		for _, s := range a.sends {
			out = append(out, &plannedAttempt{status: s.status(), args: a.args})
		}
	}
	return out
}

// classify applies the processor's class rules: duplicate_side_effect wins, else the first of
// transient_dependency, changed_arguments, retry_after_success, exhausted.
func classify(attempts []*plannedAttempt) StormClass {
	idems, args := map[string]bool{}, map[string]bool{}
	effects, anyNonOK, anyOK, afterOK := 0, false, false, false
	for i, a := range attempts {
		if a.idemKey != "" {
			idems[a.idemKey] = true
		}
		if a.drop != "args_hash" {
			args[jsonText(a.args)] = true
		}
		if a.sideEffect == sideEffectExternal || a.status == AttemptOK {
			effects++
		}
		if i > 0 && attempts[i-1].status == AttemptOK {
			afterOK = true
		}
		anyNonOK = anyNonOK || a.status != AttemptOK
		anyOK = anyOK || a.status == AttemptOK
	}
	lastOK := attempts[len(attempts)-1].status == AttemptOK
	switch {
	case len(idems) == 1 && effects >= 2:
		return ClassDuplicateSideEffect
	case len(args) <= 1 && anyNonOK && lastOK:
		return ClassTransientDependency
	case len(args) > 1:
		return ClassChangedArguments
	case afterOK:
		return ClassRetryAfterSuccess
	case !anyOK:
		return ClassExhausted
	}
	return ""
}

// findingFacts is what callFindings needs beyond the attempts: whether a subagent
// re-recorded the call, whether a call's explicit attempt numbers skip or repeat, and
// whether the shape records results at all.
type findingFacts struct {
	nested, gap, results bool
}

// callFindings lists a call's findings in a fixed order. The root never carries the caveat
// attribute and always ends OK or unset, so a failed last attempt is unrecovered.
func callFindings(attempts []*plannedAttempt, facts findingFacts) []FindingKind {
	out := []FindingKind{}
	last := attempts[len(attempts)-1]
	if last.status == AttemptError || last.status == AttemptTimeout {
		out = append(out, FindingUnrecoveredFailure)
	}
	if facts.results && resultDrift(attempts) {
		out = append(out, FindingResultDrift)
	}
	idems, external, stale, incomplete := map[string]bool{}, 0, false, false
	for _, a := range attempts {
		if a.idemKey != "" {
			idems[a.idemKey] = true
		}
		if a.sideEffect == sideEffectExternal {
			external++
		}
		stale = stale || a.stale
		incomplete = incomplete || a.drop != ""
	}
	if stale {
		out = append(out, FindingStaleCacheSuspect)
	}
	if len(idems) == 1 && external >= 2 {
		out = append(out, FindingDuplicateSideEffect)
	}
	if last.status == AttemptUnknown {
		out = append(out, FindingUnresolvedAttempt)
	}
	if facts.gap {
		out = append(out, FindingAttemptGap)
	}
	if facts.nested {
		out = append(out, FindingNestedDuplicate)
	}
	if incomplete {
		out = append(out, FindingIncompleteRecord)
	}
	return out
}

// numbersSkipOrRepeat reports explicit attempt numbers of one call that do not run 1, 2,
// 3…: a skip or a repeat. A record that dropped its number does not count.
func numbersSkipOrRepeat(c *logicalCall) bool {
	var nums []int
	for _, a := range c.attempts {
		if a.drop != "attempt" {
			nums = append(nums, a.number)
		}
	}
	slices.Sort(nums)
	for i, n := range nums {
		if n != i+1 {
			return true
		}
	}
	return false
}

// resultDrift reports ok attempts with one args hash and different result hashes.
func resultDrift(attempts []*plannedAttempt) bool {
	results := map[string]string{}
	for _, a := range attempts {
		if a.status != AttemptOK || a.result == nil {
			continue
		}
		args, res := jsonText(a.args), jsonText(a.result)
		if seen, ok := results[args]; ok && seen != res {
			return true
		}
		results[args] = res
	}
	return false
}

func assetBacked(calls []*logicalCall, asset string) bool {
	for _, c := range calls {
		if c.asset != asset {
			continue
		}
		for _, a := range c.attempts {
			if a.status == AttemptOK {
				return true
			}
		}
	}
	return false
}

func samplingReason(t Truth, anyNonOK bool, spans []Span) SamplingReason {
	divergence, incomplete, spanError := false, false, false
	for _, f := range t.Findings {
		divergence = divergence || f != FindingIncompleteRecord
		incomplete = incomplete || f == FindingIncompleteRecord
	}
	for _, s := range spans {
		spanError = spanError || s.Status.Code == StatusError
	}
	switch {
	case t.Storms > 0:
		return ReasonStorm
	case anyNonOK:
		return ReasonToolError
	case divergence:
		return ReasonDivergence
	case spanError:
		return ReasonSpanError
	case incomplete:
		return ReasonIncomplete
	}
	return ReasonClean
}
