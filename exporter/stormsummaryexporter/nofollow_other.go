//go:build !unix

package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

// oNoFollow is not available here: the Lstat before each open is the only guard.
const oNoFollow = 0
