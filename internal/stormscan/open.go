package stormscan

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openRegular opens a named input, refusing one that is not a regular file once symbolic
// links are followed: a named pipe blocks the open until a writer comes and a device such
// as /dev/zero never ends, so a glob over a directory holding either would hang the scan
// with nothing said. The open does not wait for a pipe's writer (O_NONBLOCK), and the type
// is that of what was opened. A stream is read from stdin (-).
func openRegular(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if mode := info.Mode(); !mode.IsRegular() {
		f.Close()
		what := fileKind(mode)
		if target, err := filepath.EvalSymlinks(name); err == nil && target != filepath.Clean(name) {
			what += ", through a symbolic link to " + target
		}
		return nil, fmt.Errorf("not a regular file (%s): the scan reads regular files, and a stream from stdin (-)", what)
	}
	return f, nil
}

func fileKind(mode os.FileMode) string {
	switch {
	case mode.IsDir():
		return "a directory"
	case mode&os.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&os.ModeCharDevice != 0:
		return "a character device"
	case mode&os.ModeDevice != 0:
		return "a block device"
	case mode&os.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + mode.String()
}
