// Package archive streams tar and gzip archives between containers and the
// local disk, refusing entries that would land outside the archive's root.
//
// Everything here streams: entries are copied through a fixed-size buffer,
// never read whole into memory, so a 1 GiB file costs the same memory as a
// 1 KiB one, and a header that lies about its size costs nothing but an error.
//
// The guard is the same for both directions (CheckHeader): an entry name must
// be relative and must not climb out of the root once cleaned ("../x",
// "a/../../x", "/etc/x" are refused); a symbolic link's target, resolved
// against the directory that holds the link, must stay inside the root (so an
// absolute target is refused) and must not climb with ".." after a name
// ("x/.." is the root's parent on disk when "x" is a link to "."); a hard
// link's target, which tar records relative to the root, must stay inside
// too. Sparse files are refused: a few stored bytes can claim gigabytes once
// expanded. Extract also refuses to write beneath a symbolic link, whether
// planted earlier in the same archive or already on disk, and does all its
// writing through an os.Root, so the kernel-level lookup cannot leave
// destDir either.
package archive

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// ErrUnsafeEntry is wrapped by the errors for entries that would land outside
// the archive's root. Check it with errors.Is.
var ErrUnsafeEntry = errors.New("unsafe archive entry")

// copyBufferSize is the size of the buffer entries are copied through.
const copyBufferSize = 256 * 1024

// bufPool holds the copy buffers, so repeated copies do not allocate.
var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// CheckHeader reports whether the tar entry hdr stays inside the archive's
// root: its name relative and not climbing out once cleaned, and, for
// symbolic and hard links, its target inside the root too. The error names
// the entry and wraps ErrUnsafeEntry.
func CheckHeader(hdr *tar.Header) error {
	name, err := cleanName(hdr.Name)
	if err != nil {
		return unsafeEntry(hdr.Name, err.Error())
	}
	if isSparse(hdr) {
		return unsafeEntry(hdr.Name, fmt.Sprintf("sparse file of %d bytes once expanded: refused, since a few stored bytes can expand into a file of any size", hdr.Size))
	}
	switch hdr.Typeflag {
	case tar.TypeSymlink:
		if hdr.Linkname == "" {
			return unsafeEntry(hdr.Name, "symbolic link with an empty target")
		}
		if path.IsAbs(hdr.Linkname) {
			return unsafeEntry(hdr.Name, fmt.Sprintf("symbolic link to absolute path %q points outside the archive", hdr.Linkname))
		}
		if escapes(path.Join(path.Dir(name), hdr.Linkname)) {
			return unsafeEntry(hdr.Name, fmt.Sprintf("symbolic link to %q points outside the archive", hdr.Linkname))
		}
		if climbsAfterName(hdr.Linkname) {
			return unsafeEntry(hdr.Name, fmt.Sprintf("symbolic link to %q climbs with \"..\" after a name, and on disk \"..\" climbs from wherever that name leads (another link in the archive may lead out of it); write the target as %q", hdr.Linkname, path.Clean(hdr.Linkname)))
		}
	case tar.TypeLink:
		if _, err := cleanName(hdr.Linkname); err != nil {
			return unsafeEntry(hdr.Name, fmt.Sprintf("hard link to %q: %v", hdr.Linkname, err))
		}
	}
	return nil
}

// isSparse reports whether hdr is a sparse file, in the old GNU format or
// GNU's PAX formats (which tar.Reader reports as regular files).
func isSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// cleanName cleans a tar entry name and refuses absolute names and names
// that climb out of the root. "./" and trailing slashes are fine.
func cleanName(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty name")
	}
	if path.IsAbs(name) {
		return "", errors.New("absolute path")
	}
	if strings.ContainsRune(name, 0) {
		return "", errors.New("NUL byte in name")
	}
	clean := path.Clean(name)
	if escapes(clean) {
		return "", errors.New("path climbs out of the archive with \"..\"")
	}
	return clean, nil
}

// climbsAfterName reports whether a link target has a ".." after a name
// ("x/..", "a/../b"). Cleaning such a target lexically is not what the
// kernel does: it resolves "x" first, and if "x" is itself a link (to "."
// say), "x/.." is the parent of the root. A target of leading ".."s and
// then names only climbs from the real directory that holds the link, so
// the lexical check is the physical one.
func climbsAfterName(target string) bool {
	named := false
	for part := range strings.SplitSeq(target, "/") {
		switch part {
		case "", ".":
		case "..":
			if named {
				return true
			}
		default:
			named = true
		}
	}
	return false
}

// escapes reports whether a cleaned relative path leaves its root.
func escapes(clean string) bool {
	return clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean)
}

func unsafeEntry(name, why string) error {
	return fmt.Errorf("archive entry %q: %s: %w", name, why, ErrUnsafeEntry)
}

// Repack reads a tar stream from r (for example the stdout of `tar -cf -` in
// a container), checks every entry with CheckHeader, and writes the entries
// to w as a gzip-compressed tar at level (gzip.NoCompression ..
// gzip.BestCompression, or gzip.DefaultCompression). It streams: memory use
// does not grow with the size of the entries.
//
// An unsafe entry stops the copy with an error naming it; what was written to
// w by then is an incomplete archive that the caller should discard. The
// stream must end with tar's end-of-archive marker: a stream that stops
// before it (empty, or cut between two entries) is an error wrapping
// io.ErrUnexpectedEOF, since a dropped exec connection ends without one. Repack stops with ctx.Err() when ctx
// ends, at the next read.
func Repack(ctx context.Context, r io.Reader, w io.Writer, level int) error {
	zw, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return fmt.Errorf("archive: repack: %w", err)
	}
	in := &eofTracker{r: ctxReader{ctx: ctx, r: r}}
	tr := tar.NewReader(in)
	tw := tar.NewWriter(zw)
	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) && in.hitEOF {
			// tar.Reader takes a clean end of the stream between entries for
			// the end of the archive; a stream cut short (an exec session
			// whose connection dropped ends without an error) looks the same.
			return fmt.Errorf("archive: repack: the tar stream ended without its end-of-archive marker (cut short?): %w", io.ErrUnexpectedEOF)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("archive: repack: read tar header: %w", err)
		}
		if err := CheckHeader(hdr); err != nil {
			return fmt.Errorf("archive: repack: %w", err)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("archive: repack: write header of %q: %w", hdr.Name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := io.CopyBuffer(tw, onlyReader{tr}, *bufp); err != nil {
				return fmt.Errorf("archive: repack: copy %q (%d bytes in its header): %w", hdr.Name, hdr.Size, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: repack: close tar: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("archive: repack: close gzip: %w", err)
	}
	return nil
}

// Extract reads a tar stream, plain or gzip-compressed (recognised by its
// magic bytes), from r and writes its entries beneath destDir, which must
// exist. Every entry is checked with CheckHeader; in addition Extract never
// writes beneath a symbolic link (one planted earlier in the same archive or
// one already in destDir), and it does all its writing through an os.Root
// opened on destDir. An unsafe entry stops the extraction with an error naming
// it; entries written before it stay.
//
// Regular files, directories, symbolic and hard links are written; file
// modes keep their permission bits (setuid, setgid and sticky bits are
// dropped; directories stay writable by their owner); owners are not set.
// Device nodes and FIFOs are skipped. Extract stops with ctx.Err() when ctx
// ends, at the next read.
func Extract(ctx context.Context, r io.Reader, destDir string) error {
	root, err := openRoot(destDir)
	if err != nil {
		return fmt.Errorf("archive: extract into %s: %w", destDir, err)
	}
	defer root.Close()

	br := bufio.NewReaderSize(ctxReader{ctx: ctx, r: r}, 64*1024)
	var src io.Reader = br
	if magic, _ := br.Peek(2); IsGzip(magic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("archive: extract into %s: open gzip: %w", destDir, err)
		}
		defer zr.Close()
		src = zr
	}
	x := &extractor{root: root, dirs: map[string]bool{".": true}}
	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	x.buf = *bufp
	tr := tar.NewReader(src)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("archive: extract into %s: read tar header: %w", destDir, err)
		}
		if err := x.entry(hdr, tr); err != nil {
			return fmt.Errorf("archive: extract into %s: %w", destDir, err)
		}
	}
}

// IsGzip reports whether head, the first bytes of a stream, starts with the
// gzip magic number: the one test of "is this compressed" that Extract and
// pkg/artifacts share.
func IsGzip(head []byte) bool {
	return len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b
}

// ContextReader returns a reader of r whose reads end with ctx.Err() once
// ctx is done: a long copy from a reader that cannot take a context (a
// file, a socket's body) stops at the next read.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx: ctx, r: r} }

// ctxReader ends reads with ctx.Err() once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// eofTracker records whether its reader ever reported a bare io.EOF (no
// data): tar.Reader stops reading once it has the end-of-archive marker, so
// if the underlying stream hit EOF first, the marker was missing.
type eofTracker struct {
	r      io.Reader
	hitEOF bool
}

func (t *eofTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n == 0 && errors.Is(err, io.EOF) {
		t.hitEOF = true
	}
	return n, err
}

// onlyReader hides any WriterTo/ReaderFrom so io.CopyBuffer uses our buffer.
type onlyReader struct{ io.Reader }
