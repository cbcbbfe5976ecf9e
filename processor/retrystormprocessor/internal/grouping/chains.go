package grouping

// Unit is what one summary record describes: a single logical call, or an agent-level
// chain of calls of the same tool and arguments where each earlier call failed.
type Unit struct {
	Calls []*Call
}

// Key is the unit's call key: the first call's.
func (u *Unit) Key() string { return u.Calls[0].Key }

// Attempts returns every attempt across the unit in order.
func (u *Unit) Attempts() []*Attempt {
	if len(u.Calls) == 1 {
		return u.Calls[0].Attempts
	}
	var out []*Attempt
	for _, c := range u.Calls {
		out = append(out, c.Attempts...)
	}
	return out
}

// Last returns the unit's last attempt.
func (u *Unit) Last() *Attempt { return u.Calls[len(u.Calls)-1].Last() }

type chainKey struct {
	agent int32
	tool  string
	args  string
}

// Units forms agent-level chains below each agent span (ANALYSIS.md, "Grouping", rule 6):
// calls of one tool and args hash, in start order, join the open chain while the chain's
// last call failed. calls must be in start order.
func Units(calls []*Call) []*Unit {
	units := make([]*Unit, 0, len(calls))
	open := map[chainKey]*Unit{}
	for _, c := range calls {
		first := c.Attempts[0]
		k := chainKey{agent: first.AgentRun, tool: first.ToolName, args: first.ArgsHash}
		if u, ok := open[k]; ok && u.Calls[len(u.Calls)-1].Failed() {
			u.Calls = append(u.Calls, c)
			continue
		}
		u := &Unit{Calls: []*Call{c}}
		open[k] = u
		units = append(units, u)
	}
	return units
}
