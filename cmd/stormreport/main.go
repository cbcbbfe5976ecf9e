// Command stormreport reads storm summary files and prints the top storms, totals and
// trace-level findings, as text, JSON (--json) or a self-contained HTML page with a
// timeline per storm (--html), held to agentsim's ground truth with --truth.
package main

import (
	"os"

	"github.com/retrystorm/retrystorm/internal/stormreport"
)

func main() {
	os.Exit(stormreport.Run(os.Args[1:], os.Stdout, os.Stderr))
}
