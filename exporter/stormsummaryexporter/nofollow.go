package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// errSymlink marks a summary file, backup or compressed backup that is a symbolic link. In
// a directory others can write to, a link planted at the path would make the exporter
// change the mode of, truncate and append to a file of the link's choosing.
var errSymlink = errors.New("is a symbolic link: refusing to follow it")

// openRegular opens the regular file at path without following a symbolic link there (a
// dangling one included); links in the directory part are followed as usual.
func openRegular(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if info, err := os.Lstat(path); err == nil {
		if err := checkRegular(path, info); err != nil {
			return nil, err
		}
	}
	file, err := os.OpenFile(path, flag|oNoFollow, perm)
	if err != nil {
		// A link planted between the Lstat and the open (ELOOP on Linux).
		if info, lerr := os.Lstat(path); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s %w", path, errSymlink)
		}
		return nil, err
	}
	info, err := file.Stat()
	if err == nil {
		err = checkRegular(path, info)
	}
	if err != nil {
		_ = file.Close()
		return nil, err
	}
	return file, nil
}

// checkRegular refuses a symbolic link or anything else that is not a regular file (a
// FIFO would block the open, a device would take the records).
func checkRegular(path string, info fs.FileInfo) error {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s %w", path, errSymlink)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (mode %s)", path, info.Mode().Type())
	}
	return nil
}
