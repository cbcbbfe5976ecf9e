// Package classify names a storm's class and measures what the class rules look at
// (ANALYSIS.md, "Layers, storms and classes").
package classify // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/classify"

import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"

// Class names. A storm has exactly one.
const (
	TransientDependency = "transient_dependency"
	ChangedArguments    = "changed_arguments"
	RetryAfterSuccess   = "retry_after_success"
	Exhausted           = "exhausted"
	DuplicateSideEffect = "duplicate_side_effect"
)

// Classes lists every class, for telemetry and docs.
var Classes = []string{TransientDependency, ChangedArguments, RetryAfterSuccess, Exhausted, DuplicateSideEffect}

// Try is what the class rules need of one attempt.
type Try struct {
	Status     outcome.Status
	ArgsHash   string
	IdemHash   string
	SideEffect string
}

// Of returns the class of a storm's tries in attempt order. duplicate_side_effect wins
// when present; otherwise the first matching rule of transient_dependency,
// changed_arguments, retry_after_success, exhausted. Every non-empty input gets a class.
func Of(tries []Try) string {
	if len(tries) == 0 {
		return ""
	}
	if DuplicateSideEffects(tries) {
		return DuplicateSideEffect
	}
	last := tries[len(tries)-1].Status
	anyOK, anyNonOK, okBefore := false, false, false
	for i, t := range tries {
		if t.Status == outcome.OK {
			if i < len(tries)-1 {
				okBefore = true
			}
			anyOK = true
		} else {
			anyNonOK = true
		}
	}
	args := UniqueArgs(tries)
	switch {
	case args <= 1 && anyNonOK && last == outcome.OK:
		return TransientDependency
	case args > 1:
		return ChangedArguments
	case okBefore:
		return RetryAfterSuccess
	case !anyOK:
		return Exhausted
	}
	// Only a single ok try reaches here (a transport storm whose sends all succeeded).
	return RetryAfterSuccess
}

// DuplicateSideEffects reports one idempotency hash shared by the tries that carry one, and
// at least two tries with an external side effect or an ok status under it.
func DuplicateSideEffects(tries []Try) bool {
	idem := ""
	effects := 0
	for _, t := range tries {
		if t.IdemHash == "" {
			continue
		}
		if idem == "" {
			idem = t.IdemHash
		} else if t.IdemHash != idem {
			return false
		}
		if t.SideEffect == "external" || t.Status == outcome.OK {
			effects++
		}
	}
	return idem != "" && effects >= 2
}

// UniqueArgs counts distinct args hashes; tries without one are not counted, and unknown
// arguments count as one.
func UniqueArgs(tries []Try) int {
	seen := make(map[string]struct{}, 2)
	for _, t := range tries {
		if t.ArgsHash != "" {
			seen[t.ArgsHash] = struct{}{}
		}
	}
	return max(len(seen), 1)
}

// StatusFlip reports more than one distinct status among the tries.
func StatusFlip(tries []Try) bool {
	for _, t := range tries[min(1, len(tries)):] {
		if t.Status != tries[0].Status {
			return true
		}
	}
	return false
}
