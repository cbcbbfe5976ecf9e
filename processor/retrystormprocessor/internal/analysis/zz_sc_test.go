package analysis

import (
	"fmt"
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

func TestZZScenario(t *testing.T) {
	gen, _ := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 17, Shapes: []agenttraffic.Shape{"openinference"},
		Scenarios: agenttraffic.ScenarioWeights{"nested_duplicate": 1}})
	traces := gen.Generate(1)
	td := agenttraffic.TraceToPdata(&traces[0])
	tree := grouping.NewTree(td)
	_ = tracespans.All
	an := New(DefaultConfig(), nil)
	for i, n := range tree.Nodes {
		fmt.Println(i, n.Parent, n.Span.Name(), n.Span.Attributes().AsRaw()["openinference.span.kind"])
	}
	isTool := make([]bool, len(tree.Nodes))
	logical := make([]bool, len(tree.Nodes))
	for i := range tree.Nodes {
		isTool[i], _ = an.recognize(&tree.Nodes[i], "")
	}
	markLogical(tree, isTool, logical)
	f := an.follow(tree, isTool, logical)
	if f != nil {
		for _, r := range f.conv.Requests {
			fmt.Printf("REQ id=%q tool=%q node=%d\n", r.CallID, r.Tool, r.Node)
		}
		for n, told := range f.told {
			fmt.Printf("TOLD %d %s id=%q\n", n, tree.Nodes[n].Span.Name(), told.CallID)
		}
	}
}
