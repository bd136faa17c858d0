// Package filekind holds the checks every file a user names gets before
// gpuz reads or writes it: what the path names (a regular file, a
// directory, a named pipe, a device, a socket) and a bounded read of a
// regular file that neither blocks on a named pipe nor reads a device
// without end.
package filekind

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"gpuz/internal/units"
)

// Of returns what a file of mode m is, as a phrase for messages: "a
// regular file", "a directory", "a named pipe", "a device", "a socket", "a
// symbolic link", or "not a regular file" for any other kind.
func Of(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// NotRegularError is the error for a path that names something other than
// a regular file where gpuz needs one.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

// Error says what the path is: "/dev/zero is a device, not a regular
// file".
func (e *NotRegularError) Error() string {
	if what := Of(e.Mode); what != "not a regular file" {
		return fmt.Sprintf("%s is %s, not a regular file", e.Path, what)
	}
	return fmt.Sprintf("%s is not a regular file", e.Path)
}

// Regular returns a *NotRegularError for path unless fi, its FileInfo, is a
// regular file's.
func Regular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return &NotRegularError{Path: path, Mode: fi.Mode()}
}

// Read reads the file at path (symbolic links followed) when it is a
// regular file of at most max bytes. Anything else is refused before a
// byte is read: a directory, a named pipe (which would block until a
// writer came), a device (/dev/zero would never end), a socket, each with
// a *NotRegularError. The path is checked with Stat, opened with
// O_NONBLOCK so that a named pipe put there meanwhile cannot block the
// open, and checked again with Fstat. A file larger than max is refused by
// its size, or, where the size it reports is wrong (/proc) or it grows
// while read, by reading one byte past max. Errors name path and are not
// prefixed: the caller says what was being read.
func Read(path string, max int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, fmt.Errorf("%s holds %s, more than the %s gpuz reads", path, units.Bytes(fi.Size()), units.Bytes(max))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s holds more than %s, the most gpuz reads", path, units.Bytes(max))
	}
	return data, nil
}

// Open opens the file at path (symbolic links followed) for reading when
// it is a regular file, and returns it with its FileInfo; anything else is
// a *NotRegularError. The path is checked with Stat, opened with
// O_NONBLOCK so that a named pipe put there meanwhile cannot block the
// open, and the open file checked again with Fstat.
func Open(path string) (*os.File, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := Regular(path, fi); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err == nil {
		err = Regular(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// IsNotRegular reports whether err is, or wraps, a *NotRegularError, and
// returns it.
func IsNotRegular(err error) (*NotRegularError, bool) {
	var nr *NotRegularError
	ok := errors.As(err, &nr)
	return nr, ok
}
