// Command stormreport reads storm summary files and prints the top storms, totals and
// trace-level findings, as text, JSON (--json) or a self-contained HTML page with a
// timeline per storm (--html), held to agentsim's ground truth with --truth.
// `stormreport scan` runs the retry_storm analysis over trace files and per-attempt JSONL
// first, offline, and reports on the records it makes.
package main

import (
	"os"

	"github.com/retrystorm/retrystorm/internal/stormreport"
	"github.com/retrystorm/retrystorm/internal/stormscan"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "scan" {
		os.Exit(stormscan.Run(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(stormreport.Run(os.Args[1:], os.Stdout, os.Stderr))
}
