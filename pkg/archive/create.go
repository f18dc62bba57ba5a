package archive

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Create writes rel, a file or directory beneath rootDir, as a gzip-compressed
// tar stream to w at compression level, with entries rooted at rel's base
// name (as `tar -C dir(rel) -c base(rel)` would). It is how wait archives an
// output that sits on a volume it shares with main.
//
// Everything is read through an os.Root opened on rootDir and symbolic links
// are stored as links, never followed: a link planted by the main container
// (say to /etc/shadow) cannot make wait archive its own files. Only regular
// files, directories and symbolic links are archived; other types are skipped.
func Create(ctx context.Context, rootDir, rel string, w io.Writer, level int) error {
	rel = path.Clean(strings.TrimPrefix(rel, "/"))
	if rel == "." || escapes(rel) {
		return fmt.Errorf("archive: create: %q is not a path beneath %s", rel, rootDir)
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return fmt.Errorf("archive: create from %s: %w", rootDir, err)
	}
	defer root.Close()
	top, err := root.Lstat(rel)
	if err != nil {
		return fmt.Errorf("archive: create from %s: %w", path.Join(rootDir, rel), err)
	}
	zw, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return fmt.Errorf("archive: create: %w", err)
	}
	tw := tar.NewWriter(zw)
	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	parent := path.Dir(rel)
	if !top.IsDir() {
		// A file or a link: one entry. (WalkDir would follow a link.)
		err = addEntry(root, tw, rel, path.Base(rel), *bufp)
	} else {
		err = walk(ctx, root, tw, rel, parent, *bufp)
	}
	if err != nil {
		return fmt.Errorf("archive: create from %s: %w", path.Join(rootDir, rel), err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: create: close tar: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("archive: create: close gzip: %w", err)
	}
	return nil
}

func walk(ctx context.Context, root *os.Root, tw *tar.Writer, rel, parent string, buf []byte) error {
	return fs.WalkDir(root.FS(), rel, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := strings.TrimPrefix(p, parent+"/")
		if parent == "." {
			name = p
		}
		return addEntry(root, tw, p, name, buf)
	})
}

func addEntry(root *os.Root, tw *tar.Writer, p, name string, buf []byte) error {
	info, err := root.Lstat(p)
	if err != nil {
		return err
	}
	link := ""
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		if link, err = root.Readlink(p); err != nil {
			return err
		}
	case info.IsDir(), info.Mode().IsRegular():
	default:
		return nil // devices, sockets, pipes: nothing to archive
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return err
	}
	hdr.Name = name
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := root.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyBuffer(tw, onlyReader{f}, buf)
	if err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	if n != hdr.Size {
		return fmt.Errorf("copy %s: file changed size while archived (%d bytes, then %d)", p, hdr.Size, n)
	}
	return nil
}
