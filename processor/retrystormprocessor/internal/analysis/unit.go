package analysis

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/classify"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// unit measures a record unit: per-layer tries, storm, class, flip, findings.
func (an *Analyzer) unit(t *grouping.Tree, gu *grouping.Unit, traceID pcommon.TraceID) *Unit {
	u := &Unit{Unit: gu}
	attempts := gu.Attempts()
	maxPerCall, maxSends := 0, 0
	for _, c := range gu.Calls {
		maxPerCall = max(maxPerCall, len(c.Attempts))
	}
	for _, a := range attempts {
		u.Layers.Transport += len(a.Sends)
		maxSends = max(maxSends, len(a.Sends))
	}
	u.Layers.Executor = len(attempts)
	u.Layers.Agent = len(gu.Calls)
	thr := an.cfg.StormThreshold
	u.Storm = len(gu.Calls) >= thr || maxPerCall >= thr || maxSends >= thr
	switch {
	case len(gu.Calls) > 1:
		u.Layer = stormrecord.LayerAgent
	case maxPerCall > 1:
		u.Layer = stormrecord.LayerExecutor
	case maxSends > 1:
		u.Layer = stormrecord.LayerTransport
	default:
		u.Layer = stormrecord.LayerNone
	}
	tries := tryList(attempts)
	u.StatusFlip = classify.StatusFlip(tries)
	if u.Storm {
		if len(attempts) == 1 && maxSends > 1 {
			u.Class = classify.Of(sendTries(attempts[0]))
		} else {
			u.Class = classify.Of(tries)
		}
	}
	u.Findings, u.Suspects, u.Incomplete = findings.Unit(&an.rules, t, gu, an.mem, traceID)
	return u
}

func tryList(attempts []*grouping.Attempt) []classify.Try {
	tries := make([]classify.Try, len(attempts))
	for i, a := range attempts {
		tries[i] = classify.Try{Status: a.Status, ArgsHash: a.ArgsHash, IdemHash: a.IdemHash, SideEffect: a.SideEffect}
	}
	return tries
}

// sendTries classifies a transport storm over its wire sends: same request, so one
// args hash.
func sendTries(a *grouping.Attempt) []classify.Try {
	tries := make([]classify.Try, len(a.Sends))
	for i, s := range a.Sends {
		tries[i] = classify.Try{Status: s.Status, ArgsHash: a.ArgsHash}
	}
	return tries
}

func orderSends(sends []toolspan.Send) {
	slices.SortStableFunc(sends, func(a, b toolspan.Send) int {
		if r := cmp.Compare(a.Number, b.Number); r != 0 {
			return r
		}
		return cmp.Compare(a.Span.StartTimestamp(), b.Span.StartTimestamp())
	})
	for i := range sends {
		if sends[i].Number == 0 {
			sends[i].Number = int64(i + 1)
		}
	}
}
