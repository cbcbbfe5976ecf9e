//go:build unix

package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import "golang.org/x/sys/unix"

// oNoFollow makes an open fail on a symbolic link at the last path element, closing the
// race between the exporter's Lstat and its open.
const oNoFollow = unix.O_NOFOLLOW
