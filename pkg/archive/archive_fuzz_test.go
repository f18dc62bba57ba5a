package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The fuzz targets of this file treat their input as what a hostile
// container sends: an artifact to extract, or the output of `tar -cf -`
// to repack. After every run they check the filesystem, not only the
// error: nothing outside the destination changed, no link in the
// destination resolves (on disk, through other links) outside it, and
// Extract wrote no more bytes than the stream carried.

// canary is the content of a file beside the destination that an escape
// would overwrite, replace or hard-link to.
const canary = "canary: must stay as it is"

// fuzzDest makes parent/dest (empty) and parent/outside/canary, and
// returns parent and dest.
func fuzzDest(t *testing.T) (parent, dest string) {
	t.Helper()
	parent = t.TempDir()
	dest = filepath.Join(parent, "dest")
	for _, d := range []string{dest, filepath.Join(parent, "outside")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(parent, "outside", "canary"), []byte(canary), 0o644); err != nil {
		t.Fatal(err)
	}
	return parent, dest
}

// assertContained fails if anything beside dest changed, if a link in dest
// resolves outside it, or if the regular files in dest hold more than
// maxBytes (what the stream carried: nothing may expand).
func assertContained(t *testing.T, parent, dest string, maxBytes int64) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "dest" && e.Name() != "outside" {
			t.Errorf("extraction wrote %s outside its destination", filepath.Join(parent, e.Name()))
		}
	}
	outside := filepath.Join(parent, "outside")
	if ents, err := os.ReadDir(outside); err != nil || len(ents) != 1 || ents[0].Name() != "canary" || ents[0].Type() != 0 {
		t.Errorf("extraction changed %s: %v, %v", outside, ents, err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "canary")); err != nil || string(b) != canary {
		t.Errorf("extraction changed the canary outside its destination: %q, %v", b, err)
	}
	var total int64
	err = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if where, ok := resolvesInside(dest, filepath.Dir(p), p); !ok {
				target, _ := os.Readlink(p)
				t.Errorf("extraction left the symbolic link %s -> %q, which resolves on disk to %s, outside %s", p, target, where, dest)
			}
		case info.Mode().IsRegular():
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dest, err)
	}
	if total > maxBytes {
		t.Errorf("extraction wrote %d bytes of files from a stream of %d bytes", total, maxBytes)
	}
}

// resolvesInside follows the symbolic link at link the way the kernel
// would, one component at a time from dir (a real directory), with the
// kernel's budget of 40 links in all, and reports whether every directory
// it passes through stays within root. A missing component ends the walk
// (the link dangles: the kernel fails there too). It returns the first
// directory outside root that it reached.
func resolvesInside(root, dir, link string) (string, bool) {
	target, err := os.Readlink(link)
	if err != nil {
		return "", true
	}
	inside := func(p string) bool { return p == root || strings.HasPrefix(p, root+string(filepath.Separator)) }
	cur, rest, hops := dir, strings.Split(target, "/"), 0
	if filepath.IsAbs(target) {
		cur = "/"
	}
	for len(rest) > 0 {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
		default:
			next := filepath.Join(cur, part)
			st, err := os.Lstat(next)
			switch {
			case err != nil:
				return "", true // dangles
			case st.Mode()&fs.ModeSymlink != 0:
				if hops++; hops > 40 {
					return "", true // ELOOP: reaches nothing
				}
				t, err := os.Readlink(next)
				if err != nil {
					return "", true
				}
				if filepath.IsAbs(t) {
					cur = "/"
				}
				rest = append(strings.Split(t, "/"), rest...)
				continue
			case !st.IsDir() && len(rest) > 0:
				return "", true // ENOTDIR
			}
			cur = next
		}
		if !inside(cur) {
			return cur, false
		}
	}
	return "", true
}

// entryNames lists the names of the entries tar.Reader reads from a plain
// or gzip-compressed stream, up to its end or its first error.
func entryNames(data []byte) (names []string, size int64) {
	var r io.Reader = bytes.NewReader(data)
	size = int64(len(data))
	if IsGzip(data) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, size
		}
		b, _ := io.ReadAll(zr)
		r, size = bytes.NewReader(b), int64(len(b))
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err != nil {
			return names, size
		}
		names = append(names, hdr.Name)
	}
}

// assertNamesEntry fails unless an ErrUnsafeEntry error names one of the
// entries (quoted, as %q writes it).
func assertNamesEntry(t *testing.T, err error, names []string) {
	t.Helper()
	if !errors.Is(err, ErrUnsafeEntry) {
		return
	}
	for _, n := range names {
		if strings.Contains(err.Error(), strconv.Quote(n)) {
			return
		}
	}
	t.Errorf("error %q names none of the entries %q", err, names)
}

// seedStreams adds the archives of the unit tests, plain and compressed.
func seedStreams(f *testing.F) {
	streams := [][]byte{goodTree(f), makeTar(f), sizeLie(f)}
	for _, tc := range hostile(f) {
		streams = append(streams, tc.tar)
	}
	for _, s := range streams {
		f.Add(s)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(s)
		zw.Close()
		f.Add(gz.Bytes())
	}
}

// FuzzExtract extracts arbitrary bytes (plain tar, gzip, garbage).
func FuzzExtract(f *testing.F) {
	seedStreams(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		parent, dest := fuzzDest(t)
		err := Extract(context.Background(), bytes.NewReader(data), dest)
		names, size := entryNames(data)
		assertNamesEntry(t, err, names)
		assertContained(t, parent, dest, size)
	})
}

// FuzzRepack repacks arbitrary bytes. What Repack accepts must come out
// entry for entry as it went in, and must extract without escaping; what it
// refuses as unsafe, Extract must refuse too.
func FuzzRepack(f *testing.F) {
	seedStreams(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var tgz bytes.Buffer
		err := Repack(context.Background(), bytes.NewReader(data), &tgz, gzip.BestSpeed)
		names, size := entryNames(data)
		assertNamesEntry(t, err, names)
		parent, dest := fuzzDest(t)
		if err != nil {
			if errors.Is(err, ErrUnsafeEntry) && !IsGzip(data) {
				if xerr := Extract(context.Background(), bytes.NewReader(data), dest); xerr == nil {
					t.Errorf("Repack refused the stream (%v), Extract took it", err)
				}
				assertContained(t, parent, dest, size)
			}
			return
		}
		in, out := listEntries(t, bytes.NewReader(data)), listEntries(t, gunzip(t, tgz.Bytes()))
		if len(in) != len(out) {
			t.Fatalf("Repack turned %d entries into %d:\n in %q\nout %q", len(in), len(out), in, out)
		}
		for i := range in {
			if in[i] != out[i] {
				t.Errorf("entry %d: Repack turned %q into %q", i, in[i], out[i])
			}
		}
		if err := Extract(context.Background(), &tgz, dest); err != nil && errors.Is(err, ErrUnsafeEntry) {
			assertNamesEntry(t, err, names)
		}
		assertContained(t, parent, dest, size)
	})
}

// listEntries describes every entry of a tar stream: type, name, link
// target, mode and contents.
func listEntries(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read back: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read back %q: %v", hdr.Name, err)
		}
		out = append(out, strings.Join([]string{string(hdr.Typeflag), hdr.Name, hdr.Linkname, strconv.FormatInt(hdr.Mode, 8), string(body)}, "|"))
	}
}

func gunzip(t *testing.T, b []byte) io.Reader {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Repack wrote no gzip stream: %v", err)
	}
	return zr
}

// specTar builds a tar from a line-per-entry spec, so the fuzzer mutates
// names and link targets rather than tar's checksums: each line is a type
// letter (f file, d directory, l symbolic link, h hard link, p FIFO), the
// name, a tab and the body (f) or the link target (l, h). A line "!gz"
// compresses the stream; "!cut N" cuts it after N bytes.
func specTar(spec string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	gz, cut := false, -1
	for line := range strings.SplitSeq(spec, "\n") {
		if line == "" {
			continue
		}
		if line == "!gz" {
			gz = true
			continue
		}
		if n, ok := strings.CutPrefix(line, "!cut "); ok {
			cut, _ = strconv.Atoi(n)
			continue
		}
		name, arg, _ := strings.Cut(line[1:], "\t")
		hdr := &tar.Header{Name: name, Mode: 0o644}
		body := ""
		switch line[0] {
		case 'f':
			hdr.Typeflag, hdr.Size, body = tar.TypeReg, int64(len(arg)), arg
		case 'd':
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
		case 'l':
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, arg
		case 'h':
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, arg
		case 'p':
			hdr.Typeflag = tar.TypeFifo
		default:
			continue
		}
		if tw.WriteHeader(hdr) != nil {
			continue // a name tar cannot write (NUL): not an archive anyone sends
		}
		io.WriteString(tw, body)
	}
	tw.Close()
	b := buf.Bytes()
	if cut >= 0 && cut < len(b) {
		b = b[:cut]
	}
	if gz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(b)
		zw.Close()
		b = z.Bytes()
	}
	return b
}

// FuzzExtractEntries extracts archives built from a spec (see specTar),
// seeded with the unit tests' hostile archives: links to links, links
// through links, files over links, hard links out, truncation.
func FuzzExtractEntries(f *testing.F) {
	for _, spec := range []string{
		"dout/\nfout/a.txt\thello\ndout/sub/\nlout/link\tsub/b.txt\nlout/sub/up\t../a.txt\nhout/hard\tout/a.txt\npout/fifo",
		"f../x\tevil",
		"da/\nfa/../../x\tevil",
		"f/etc/x\tevil",
		"lroot\t/",
		"dd/\nld/up\t../../etc",
		"hh\t../../etc/passwd",
		"hh\t/etc/passwd",
		"lx\t.\nlx/up\t..\nfx/up/evil\tevil",
		"dd/\nll\td\nfl/f\tthrough the link",
		"dd/\nll\td\ndl/",
		"ftarget\toriginal\nlf\ttarget\nff\tnew",
		"fa\talpha\nfb\tbeta\n!cut 1024",
		"fa\talpha\nfb\tbeta\n!cut 515\n!gz",
		"dd/\nhh\td",
		"f./\tx\nd./",
	} {
		f.Add(spec)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		data := specTar(spec)
		parent, dest := fuzzDest(t)
		err := Extract(context.Background(), bytes.NewReader(data), dest)
		names, size := entryNames(data)
		assertNamesEntry(t, err, names)
		assertContained(t, parent, dest, size)
	})
}
