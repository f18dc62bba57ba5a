package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// extractor writes the entries of one archive beneath root.
type extractor struct {
	root *os.Root
	// dirs holds the cleaned paths known to be real directories beneath
	// root (created or checked by this extraction), so each parent is
	// checked for symbolic links once.
	dirs map[string]bool
	buf  []byte
}

func openRoot(dir string) (*os.Root, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return os.OpenRoot(dir)
}

// entry writes one tar entry; tr is positioned at its contents.
func (x *extractor) entry(hdr *tar.Header, tr io.Reader) error {
	if err := CheckHeader(hdr); err != nil {
		return err
	}
	name, _ := cleanName(hdr.Name)
	if name == "." {
		// The archive's root itself ("./"): destDir already exists.
		return nil
	}
	if err := x.ensureParent(hdr.Name, path.Dir(name)); err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(hdr.Name, name, hdr.FileInfo().Mode())
	case tar.TypeReg:
		return x.file(hdr, name, tr)
	case tar.TypeSymlink:
		if err := x.removeNonDir(hdr.Name, name); err != nil {
			return err
		}
		if err := x.root.Symlink(hdr.Linkname, name); err != nil {
			return fmt.Errorf("create symbolic link %q: %w", hdr.Name, err)
		}
		return nil
	case tar.TypeLink:
		target, _ := cleanName(hdr.Linkname)
		st, err := x.root.Lstat(target)
		if err != nil {
			return fmt.Errorf("create hard link %q to %q: %w", hdr.Name, hdr.Linkname, err)
		}
		if !st.Mode().IsRegular() {
			return unsafeEntry(hdr.Name, fmt.Sprintf("hard link to %q, which is not a regular file", hdr.Linkname))
		}
		if err := x.removeNonDir(hdr.Name, name); err != nil {
			return err
		}
		if err := x.root.Link(target, name); err != nil {
			return fmt.Errorf("create hard link %q to %q: %w", hdr.Name, hdr.Linkname, err)
		}
		return nil
	default:
		// Device nodes, FIFOs and unknown types are skipped (documented on Extract).
		return nil
	}
}

// ensureParent makes sure dir exists beneath root as a chain of real
// directories, creating what is missing, and refuses any component that is a
// symbolic link (planted earlier in the archive or already on disk).
func (x *extractor) ensureParent(entry, dir string) error {
	if x.dirs[dir] {
		return nil
	}
	cur := "."
	for _, part := range strings.Split(dir, "/") {
		cur = path.Join(cur, part)
		if x.dirs[cur] {
			continue
		}
		st, err := x.root.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := x.root.Mkdir(cur, 0o755); err != nil {
				return fmt.Errorf("create directory %q for %q: %w", cur, entry, err)
			}
		case err != nil:
			return fmt.Errorf("check directory %q for %q: %w", cur, entry, err)
		case st.Mode()&fs.ModeSymlink != 0:
			return unsafeEntry(entry, fmt.Sprintf("its parent %q is a symbolic link, which extraction does not follow", cur))
		case !st.IsDir():
			return fmt.Errorf("archive entry %q: its parent %q is not a directory", entry, cur)
		}
		x.dirs[cur] = true
	}
	return nil
}

func (x *extractor) dir(entry, name string, mode fs.FileMode) error {
	perm := mode.Perm() | 0o700
	st, err := x.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := x.root.Mkdir(name, perm); err != nil {
			return fmt.Errorf("create directory %q: %w", entry, err)
		}
	case err != nil:
		return fmt.Errorf("check directory %q: %w", entry, err)
	case st.Mode()&fs.ModeSymlink != 0:
		return unsafeEntry(entry, "directory entry over a symbolic link, which extraction does not follow")
	case !st.IsDir():
		return fmt.Errorf("archive entry %q: a directory over an existing file", entry)
	default:
		if err := x.root.Chmod(name, perm); err != nil {
			return fmt.Errorf("set mode of directory %q: %w", entry, err)
		}
	}
	x.dirs[name] = true
	return nil
}

func (x *extractor) file(hdr *tar.Header, name string, tr io.Reader) error {
	if err := x.removeNonDir(hdr.Name, name); err != nil {
		return err
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, hdr.FileInfo().Mode().Perm())
	if err != nil {
		return fmt.Errorf("create file %q: %w", hdr.Name, err)
	}
	n, err := io.CopyBuffer(onlyWriter{f}, onlyReader{tr}, x.buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write file %q (%d of %d bytes in its header): %w", hdr.Name, n, hdr.Size, err)
	}
	if !hdr.ModTime.IsZero() {
		// Best effort: a time the filesystem refuses is not worth failing for.
		_ = x.root.Chtimes(name, hdr.ModTime, hdr.ModTime)
	}
	return nil
}

// removeNonDir removes whatever non-directory is at name, so the new entry
// replaces it instead of writing through it (tar's own behaviour).
func (x *extractor) removeNonDir(entry, name string) error {
	st, err := x.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %q: %w", entry, err)
	}
	if st.IsDir() {
		return fmt.Errorf("archive entry %q: would replace an existing directory", entry)
	}
	if err := x.root.Remove(name); err != nil {
		return fmt.Errorf("replace %q: %w", entry, err)
	}
	return nil
}

// onlyWriter hides *os.File's ReaderFrom so io.CopyBuffer uses our buffer.
type onlyWriter struct{ io.Writer }
