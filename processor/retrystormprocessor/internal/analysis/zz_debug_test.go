package analysis

import (
	"fmt"
	"os"
	"testing"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestZZDebug(t *testing.T) {
	name := os.Getenv("CAP")
	reqs, _ := fixtures.LoadCapture(t, name)
	td := ptrace.NewTraces()
	for _, r := range reqs {
		r.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	an := New(DefaultConfig(), nil)
	tree := grouping.NewTree(td)
	isTool := make([]bool, len(tree.Nodes))
	logical := make([]bool, len(tree.Nodes))
	for i := range tree.Nodes {
		isTool[i], _ = an.recognize(&tree.Nodes[i], "")
	}
	markLogical(tree, isTool, logical)
	f := an.follow(tree, isTool, logical)
	if f != nil {
		for _, r := range f.conv.Requests {
			fmt.Printf("REQ id=%q tool=%q args=%.60q node=%s\n", r.CallID, r.Tool, r.Args, tree.Nodes[r.Node].Span.Name())
		}
		for _, r := range f.conv.Responses {
			fmt.Printf("RESP id=%q tool=%q failed=%v content=%.60q node=%s\n", r.CallID, r.Tool, r.Failed, r.Content, tree.Nodes[r.Node].Span.Name())
		}
		fmt.Println("offers", f.conv.Offers, "unanswered", f.unanswered)
		for n, told := range f.told {
			fmt.Printf("TOLD %s byRole=%v id=%q tool=%q failed=%v\n", tree.Nodes[n].Span.Name(), f.byRole[n], told.CallID, told.Tool, told.Failed)
		}
	}
	tr := an.Analyze(td)
	for _, u := range tr.Units {
		for _, c := range u.Calls {
			fmt.Printf("CALL %s tool=%s attempts=%d storm=%v class=%s layer=%s\n", c.Key, c.Last().ToolName, len(c.Attempts), u.Storm, u.Class, u.Layer)
			for _, a := range c.Attempts {
				fmt.Printf("   %s status=%s args=%v res=%v remap=%v\n", tree.Nodes[a.Node].Span.Name(), a.Status, a.Has(toolspan.FieldArgsHash), a.Has(toolspan.FieldResultHash), a.Remap != nil)
			}
		}
		for _, fi := range u.Findings {
			fmt.Println("   finding", fi.Kind)
		}
	}
	fmt.Println("signals", tr.Signals, "unseen", tr.Unseen)
}
