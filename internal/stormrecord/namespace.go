package stormrecord

import "strings"

// Prefix starts every attribute, span name and event name retry_storm writes: the
// namespace it reserves. The processor removes or renames whatever arrives under it
// (processor README, "Security"), so that what readers find there is its own.
const Prefix = "retrystorm."

// written are the attribute keys the processor writes on spans.
var written = map[string]struct{}{
	AttrCallKey: {}, AttrCallAttempt: {}, AttrCallAttempts: {}, AttrCallLayer: {}, AttrCallStorm: {},
	AttrCallClass: {}, AttrCallTool: {}, AttrStatus: {}, AttrArgsHash: {}, AttrResultHash: {},
	AttrIdemHash: {}, AttrFollowed: {}, AttrStatusRemap: {}, AttrTraceStorms: {}, AttrTraceFinding: {},
	AttrTraceUnseen: {}, AttrSampling: {}, AttrCallSummary: {}, AttrFindingSummary: {}, AttrSeal: {},
}

// Written reports whether key is an attribute the processor writes on spans: what it
// derived, never a client's text.
func Written(key string) bool {
	if !strings.HasPrefix(key, Prefix) {
		return false
	}
	_, ok := written[key]
	return ok
}
