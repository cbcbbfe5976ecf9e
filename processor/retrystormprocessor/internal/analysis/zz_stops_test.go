package analysis

import (
	"fmt"
	"testing"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

func TestZZStops(t *testing.T) {
	gen, _ := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 5})
	traces := gen.Generate(2000)
	an := New(DefaultConfig(), nil)
	stops := map[triageStop]int{}
	shapes := map[string]int{}
	for i := range traces {
		td := agenttraffic.TraceToPdata(&traces[i])
		q := an.Triage(td)
		stops[q.stop]++
		if q.stop == stopResultUnread {
			tr := an.Analyze(td)
			for _, u := range tr.Units {
				for _, a := range u.Attempts() {
					if a.Told&(1<<5) != 0 || a.ResultHash == "" {
						shapes[fmt.Sprintf("%s %s told=%b", a.ToolName, a.Span.Name(), a.Told)]++
					}
				}
			}
		}
		an.Recycle(q)
	}
	fmt.Println(stops)
	fmt.Println(shapes)
}
