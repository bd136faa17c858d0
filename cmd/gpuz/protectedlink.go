package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"gpuz/internal/termsafe"
)

// maxLinkHops bounds the symbolic links checkLinks follows, as the
// kernel's 40 (ELOOP).
const maxLinkHops = 40

// errUnsafeLink is the error of an output path through a symbolic link that
// the kernel's protected_symlinks rule would not follow.
var errUnsafeLink = errors.New("unsafe symbolic link")

// checkLinks refuses an output path that passes through a symbolic link
// in a world-writable sticky directory (/tmp) whose owner is neither the
// caller nor the directory's owner: the rule of the kernel's
// fs.protected_symlinks, which gpuz applies itself because it resolves
// links before writing (createAtomic writes through a link by renaming
// over its target). Without it, a link planted in a shared directory by
// another user makes a run of root's replace a file that user could not
// write. Every link on the way is checked, the targets' own links too.
func checkLinks(path string) error {
	hops := 0
	return checkLinksFrom(path, &hops)
}

// checkLinksFrom checks path's components from the root, following each
// link's target (checked the same way); hops counts the links followed.
func checkLinksFrom(path string, hops *int) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	parts := strings.Split(abs, string(filepath.Separator))
	prefix := string(filepath.Separator)
	for _, part := range parts {
		if part == "" {
			continue
		}
		name := filepath.Join(prefix, part)
		fi, err := os.Lstat(name)
		if err != nil {
			return nil // a missing component: nothing further to follow
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if err := linkAllowed(name, fi); err != nil {
				return err
			}
			if *hops++; *hops > maxLinkHops {
				return fmt.Errorf("%s: too many levels of symbolic links", termsafe.String(path))
			}
			target, err := os.Readlink(name)
			if err != nil {
				return err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(prefix, target)
			}
			if err := checkLinksFrom(target, hops); err != nil {
				return err
			}
			if name, err = filepath.EvalSymlinks(name); err != nil {
				return nil // a dangling link: the write creates its target
			}
		}
		prefix = name
	}
	return nil
}

// linkAllowed applies protected_symlinks to the link at name: refused when
// its directory is world-writable and sticky and the link belongs neither
// to the caller nor to the directory's owner.
func linkAllowed(name string, link fs.FileInfo) error {
	dir := filepath.Dir(name)
	di, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	if di.Mode()&fs.ModeSticky == 0 || di.Mode().Perm()&0o002 == 0 {
		return nil
	}
	lst, ok1 := link.Sys().(*syscall.Stat_t)
	dst, ok2 := di.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 {
		return nil
	}
	if lst.Uid == uint32(os.Geteuid()) || lst.Uid == dst.Uid {
		return nil
	}
	return fmt.Errorf("%w: %s is a link owned by uid %d in the world-writable sticky directory %s; gpuz does not follow it, as the kernel's protected_symlinks rule would not (write to the target's own path instead)",
		errUnsafeLink, termsafe.String(name), lst.Uid, termsafe.String(dir))
}
