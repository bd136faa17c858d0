package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"gpuz/internal/filekind"
)

// outputFile is an output file flag (--json, --cpuprofile) and its value.
type outputFile struct {
	flag, path string
	// stdout says whether "-" means standard output for this flag.
	stdout bool
}

// checkOutputs checks, before anything runs, that every output file given
// can be written: its directory exists, it is not a directory, it does not
// look like a flag (--json --device sim would otherwise name a file
// "--device"), and no file is given twice (compared as cleaned absolute
// paths, and as the same file where both exist). Each problem is a usage
// error.
//
// The files are checked, not kept open: an existing regular file is
// opened for writing without truncation, and the temporary file its write
// will make beside it (createAtomic) is made and removed; a new file is
// made and removed. So the user's previous file is left intact until the run writes it at
// the end (--json) or starts profiling (--cpuprofile), and a run refused
// for another reason leaves no empty file behind. The window between the
// check and the write is small; a file that becomes unwritable in it is a
// write error (status 1).
func checkOutputs(outs ...outputFile) error {
	seen := map[string]outputFile{}
	var infos []struct {
		out outputFile
		fi  fs.FileInfo
	}
	for _, out := range outs {
		switch {
		case out.path == "":
			continue
		case out.path == "-" && out.stdout:
			continue
		case out.path == "-":
			return usagef("%s -: standard output is not allowed here; give a file", out.flag)
		case strings.HasPrefix(out.path, "-"):
			return usagef("%s %q looks like a flag; give a file name (or - for standard output)", out.flag, out.path)
		}
		abs, err := filepath.Abs(out.path)
		if err != nil {
			return usagef("%s %s: %w", out.flag, out.path, err)
		}
		if prev, ok := seen[abs]; ok {
			return usagef("%s and %s name the same file %s", prev.flag, out.flag, out.path)
		}
		seen[abs] = out
		fi, err := checkOutput(out.flag, abs)
		if err != nil {
			return err
		}
		if fi != nil {
			for _, o := range infos {
				if os.SameFile(o.fi, fi) {
					return usagef("%s and %s name the same file (%s, %s)", o.out.flag, out.flag, o.out.path, out.path)
				}
			}
			infos = append(infos, struct {
				out outputFile
				fi  fs.FileInfo
			}{out, fi})
		}
	}
	return nil
}

// checkOutput checks one output path (absolute) and returns its FileInfo
// when the file exists.
func checkOutput(flag, path string) (fs.FileInfo, error) {
	if err := checkLinks(path); err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return nil, usagef("%s %s: is a directory", flag, path)
	case err == nil && !writable(fi.Mode()):
		// A named pipe would block the write until a reader came (and a
		// pipe nobody reads for ever); a socket cannot be opened.
		return nil, usagef("%s %v: gpuz writes its outputs to regular files or character devices (/dev/null)", flag, filekind.Regular(path, fi))
	case err == nil && !fi.Mode().IsRegular():
		// A character device (/dev/null, /dev/full) is written in place.
		return fi, nil
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, usagef("%s: %w", flag, err)
		}
		f.Close()
		// The write replaces the file by a temporary one made beside it
		// (beside the link's target): the directory must take it too.
		tmp, err := createAtomic(path)
		if err != nil {
			return nil, usagef("%s: %w", flag, err)
		}
		tmp.Abort()
		return fi, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, usagef("%s: %w", flag, err)
	}
	dir := filepath.Dir(path)
	if di, err := os.Stat(dir); err != nil {
		return nil, usagef("%s %s: directory %s: %w", flag, path, dir, unwrapPath(err))
	} else if !di.IsDir() {
		return nil, usagef("%s %s: %s is not a directory", flag, path, dir)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	f.Close()
	os.Remove(path)
	return nil, nil
}

// writeFile writes the file path with write, through createAtomic: the
// file is replaced only once write has succeeded, and a failure leaves the
// old file (or none) as it was. what names the contents in errors.
func writeFile(path, what string, write func(io.Writer) error) error {
	f, err := createAtomic(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	if err := write(f); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s to %s: %w", what, path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("writing %s to %s: %w", what, path, err)
	}
	return nil
}

// atomicFile is an output file written under a temporary name in its
// directory and renamed into place by Commit, so that the user's file is
// either the old one or the complete new one: a write that fails (a full
// disk, a file size limit, a run that crashes) leaves the old file as it
// was. Where path is a character device (/dev/null, /dev/full) the file
// is written in place: renaming over a device would replace it. A named
// pipe or a socket is refused (openDevice).
type atomicFile struct {
	f *os.File
	// path is the file written: the user's path with its symbolic links
	// resolved, so that a link is written through, not replaced.
	path string
	// tmp is the temporary file's path; "" when writing in place.
	tmp string
}

// createAtomic starts writing path. A new file is created with mode 0666
// less the umask, as os.Create does; a replaced file keeps its mode (not
// its owner, nor its other hard links, which keep the old contents).
func createAtomic(path string) (*atomicFile, error) {
	if err := checkLinks(path); err != nil {
		return nil, err
	}
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	fi, err := os.Stat(target)
	perm, keepMode := fs.FileMode(0o666), false
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return openDevice(target, fi)
	case err == nil:
		perm, keepMode = fi.Mode().Perm(), true
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	dir, base := filepath.Split(target)
	for try := 0; ; try++ {
		tmp := filepath.Join(dir, "."+base+".tmp"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("creating a temporary file beside %s: %w", path, unwrapPath(err))
		}
		if keepMode {
			// The umask applied at creation; the old file's mode is kept.
			if err := f.Chmod(perm); err != nil {
				f.Close()
				os.Remove(tmp)
				return nil, fmt.Errorf("creating a temporary file beside %s: %w", path, unwrapPath(err))
			}
		}
		return &atomicFile{f: f, path: target, tmp: tmp}, nil
	}
}

// writable reports whether gpuz writes an output file of mode m: a regular
// file or a character device (/dev/null, /dev/full), not a named pipe, a
// socket, a directory or a block device.
func writable(m fs.FileMode) bool {
	return m.IsRegular() || m&fs.ModeCharDevice != 0
}

// openDevice opens path, which fi says is not a regular file, to be
// written in place: only a character device is (renaming over it would
// replace it); anything else is a *filekind.NotRegularError. The open does
// not block (O_NONBLOCK: a named pipe put at path since the check has no
// reader to wait for) and the open file is checked again; the device is
// then written in blocking mode.
func openDevice(path string, fi fs.FileInfo) (*atomicFile, error) {
	if !writable(fi.Mode()) {
		return nil, filekind.Regular(path, fi)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		// A named pipe without a reader, or a socket, put there meanwhile.
		if fi, serr := os.Stat(path); serr == nil && !writable(fi.Mode()) {
			return nil, filekind.Regular(path, fi)
		}
	}
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err == nil && !writable(fi.Mode()) {
		err = filekind.Regular(path, fi)
	}
	if err == nil {
		err = syscall.SetNonblock(int(f.Fd()), false)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &atomicFile{f: f, path: path}, nil
}

// Write writes to the file; an error names the file written, not the
// temporary one.
func (a *atomicFile) Write(p []byte) (int, error) {
	n, err := a.f.Write(p)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = &fs.PathError{Op: pe.Op, Path: a.path, Err: pe.Err}
	}
	return n, err
}

// Commit completes the file: it is synced, closed and renamed into place.
// On an error the temporary file is removed and the old file is left as it
// was.
func (a *atomicFile) Commit() error {
	if a.tmp == "" {
		return a.f.Close()
	}
	err := errors.Join(unwrapPath(a.f.Sync()), unwrapPath(a.f.Close()))
	if err == nil {
		err = unwrapPath(os.Rename(a.tmp, a.path))
	}
	if err != nil {
		os.Remove(a.tmp)
	}
	return err
}

// Abort gives up the file: the temporary file is closed and removed, and
// the old file is left as it was.
func (a *atomicFile) Abort() {
	a.f.Close()
	if a.tmp != "" {
		os.Remove(a.tmp)
	}
}

// unwrapPath returns the cause of a *fs.PathError, whose message repeats
// the path already named.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// startCPUProfile starts a pprof CPU profile written to path ("" for none)
// and returns the function that stops it and reports, with the path, any
// error writing or closing the file (pprof itself drops write errors).
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := createAtomic(path)
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	w := &errWriter{w: f}
	if err := pprof.StartCPUProfile(w); err != nil {
		f.Abort()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile() // returns once the profile is written
		err := w.err
		if err != nil {
			f.Abort()
		} else {
			err = f.Commit()
		}
		if err != nil {
			return fmt.Errorf("writing the CPU profile to %s: %w", path, err)
		}
		return nil
	}, nil
}

// errWriter is a writer that keeps the first error of w and writes nothing
// after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// calibratedProfilePath is where gpuz calibrate saves this machine's host
// profile and where the commands that rank the cpu mode look for it when
// --host-profile is not given: gpuz/host-profile.json in the user's
// configuration directory (os.UserConfigDir: $XDG_CONFIG_HOME, else
// ~/.config, on Linux).
func calibratedProfilePath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the configuration directory for the calibrated profile: %w", err)
	}
	return filepath.Join(dir, "gpuz", "host-profile.json"), nil
}
