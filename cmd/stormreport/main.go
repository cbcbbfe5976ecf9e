// Command stormreport reads storm summary files and prints the top storms and totals, as
// text, JSON (--json) or a self-contained HTML page with a timeline per storm (--html).
package main

import (
	"os"

	"github.com/retrystorm/retrystorm/internal/stormreport"
)

func main() {
	os.Exit(stormreport.Run(os.Args[1:], os.Stdout, os.Stderr))
}
