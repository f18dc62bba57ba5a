package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// entry is one tar entry for a test archive.
type entry struct {
	hdr  tar.Header
	body string
}

func reg(name, body string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))}, body: body}
}

func dir(name string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}}
}

func symlink(name, target string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

func hardlink(name, target string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o644}}
}

// makeTar writes entries as a tar stream.
func makeTar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatalf("write header %q: %v", hdr.Name, err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatalf("write body %q: %v", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sizeLie is a tar whose only header claims 2 GiB of contents but whose
// stream ends after 1 KiB.
func sizeLie(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big", Mode: 0o644, Size: 2 << 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes() // no Close: the stream just stops, as a lying tar would
}

func readTestdata(t testing.TB, name string, gunzip bool) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if !gunzip {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hostile are the archives both Repack and Extract must refuse; wantEntry is
// the entry name the error must contain.
func hostile(t testing.TB) []struct {
	name      string
	tar       []byte
	wantEntry string
	wantErr   error
} {
	return []struct {
		name      string
		tar       []byte
		wantEntry string
		wantErr   error
	}{
		{"dot-dot", makeTar(t, reg("../x", "evil")), `"../x"`, ErrUnsafeEntry},
		{"dot-dot after cleaning", makeTar(t, dir("a/"), reg("a/../../x", "evil")), `"a/../../x"`, ErrUnsafeEntry},
		{"absolute", makeTar(t, reg("/etc/x", "evil")), `"/etc/x"`, ErrUnsafeEntry},
		{"symlink to root", makeTar(t, symlink("root", "/")), `"root"`, ErrUnsafeEntry},
		{"symlink climbing out", makeTar(t, dir("d/"), symlink("d/up", "../../etc")), `"d/up"`, ErrUnsafeEntry},
		{"hard link out", makeTar(t, hardlink("h", "../../etc/passwd")), `"h"`, ErrUnsafeEntry},
		{"hard link absolute", makeTar(t, hardlink("h", "/etc/passwd")), `"h"`, ErrUnsafeEntry},
		{"empty name", makeTar(t, entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "", Mode: 0o644}}), `""`, ErrUnsafeEntry},
		{"2 GiB size lie", sizeLie(t), `"big"`, io.ErrUnexpectedEOF},
		{"2 GiB sparse, GNU format", readTestdata(t, "sparse-2g-gnu.tar.gz", true), `"sparse"`, ErrUnsafeEntry},
		{"2 GiB sparse, PAX format", readTestdata(t, "sparse-2g-pax.tar.gz", true), `"sparse"`, ErrUnsafeEntry},
	}
}

func TestCheckHeaderAllows(t *testing.T) {
	for _, hdr := range []tar.Header{
		{Typeflag: tar.TypeReg, Name: "out/file"},
		{Typeflag: tar.TypeReg, Name: "./out/file"},
		{Typeflag: tar.TypeDir, Name: "./"},
		{Typeflag: tar.TypeReg, Name: "a/../b"},
		{Typeflag: tar.TypeSymlink, Name: "out/link", Linkname: "../out/file"},
		{Typeflag: tar.TypeSymlink, Name: "out/link", Linkname: "."},
		{Typeflag: tar.TypeLink, Name: "out/hard", Linkname: "out/file"},
	} {
		if err := CheckHeader(&hdr); err != nil {
			t.Errorf("CheckHeader(%q -> %q) = %v, want nil", hdr.Name, hdr.Linkname, err)
		}
	}
}

func TestRepackRefusesHostileEntries(t *testing.T) {
	for _, tc := range hostile(t) {
		t.Run(tc.name, func(t *testing.T) {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			err := Repack(context.Background(), bytes.NewReader(tc.tar), io.Discard, gzip.BestSpeed)
			runtime.ReadMemStats(&m1)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Repack = %v, want an error wrapping %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantEntry) {
				t.Errorf("error %q does not name entry %s", err, tc.wantEntry)
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 32<<20 {
				t.Errorf("Repack allocated %d bytes for a hostile archive; it must stream", alloc)
			}
		})
	}
}

func TestExtractRefusesHostileEntries(t *testing.T) {
	for _, tc := range hostile(t) {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "dest")
			if err := os.Mkdir(dest, 0o755); err != nil {
				t.Fatal(err)
			}
			err := Extract(context.Background(), bytes.NewReader(tc.tar), dest)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Extract = %v, want an error wrapping %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantEntry) {
				t.Errorf("error %q does not name entry %s", err, tc.wantEntry)
			}
			assertOnlyDest(t, parent)
		})
	}
}

// assertOnlyDest fails if anything but dest/ was created in parent.
func assertOnlyDest(t *testing.T, parent string) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "dest" {
			t.Errorf("extraction wrote %s outside its destination", filepath.Join(parent, e.Name()))
		}
	}
}

// TestExtractDoesNotFollowPlantedSymlinks covers archives whose every
// symbolic link is lexically inside the root, but which plant a link and
// then write through it.
func TestExtractDoesNotFollowPlantedSymlinks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tar       []byte
		wantEntry string
	}{
		{
			// "x" is the root itself, so "x/up" -> ".." is lexically inside
			// ("x/..") but on disk it is dest/up -> "..", the parent.
			name:      "link to root then link through it",
			tar:       makeTar(t, symlink("x", "."), symlink("x/up", ".."), reg("x/up/evil", "evil")),
			wantEntry: `"x/up"`,
		},
		{
			name:      "write beneath a planted link",
			tar:       makeTar(t, dir("d/"), symlink("l", "d"), reg("l/f", "through the link")),
			wantEntry: `"l/f"`,
		},
		{
			name:      "directory entry over a planted link",
			tar:       makeTar(t, dir("d/"), symlink("l", "d"), dir("l/")),
			wantEntry: `"l/"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "dest")
			if err := os.Mkdir(dest, 0o755); err != nil {
				t.Fatal(err)
			}
			err := Extract(context.Background(), bytes.NewReader(tc.tar), dest)
			if !errors.Is(err, ErrUnsafeEntry) {
				t.Fatalf("Extract = %v, want an error wrapping ErrUnsafeEntry", err)
			}
			if !strings.Contains(err.Error(), tc.wantEntry) {
				t.Errorf("error %q does not name entry %s", err, tc.wantEntry)
			}
			assertOnlyDest(t, parent)
		})
	}
}

func TestExtractDoesNotFollowExistingSymlink(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "dest")
	outside := filepath.Join(parent, "outside")
	for _, d := range []string{dest, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dest, "out")); err != nil {
		t.Fatal(err)
	}
	err := Extract(context.Background(), bytes.NewReader(makeTar(t, reg("out/f", "evil"))), dest)
	if !errors.Is(err, ErrUnsafeEntry) {
		t.Fatalf("Extract = %v, want ErrUnsafeEntry", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("extraction wrote %d entries through a symbolic link", len(ents))
	}
}

// TestExtractReplacesSymlinkWithFile: a regular file entry over an earlier
// symlink replaces the link instead of writing through it.
func TestExtractReplacesSymlinkWithFile(t *testing.T) {
	dest := t.TempDir()
	tr := makeTar(t, reg("target", "original"), symlink("f", "target"), reg("f", "new"))
	if err := Extract(context.Background(), bytes.NewReader(tr), dest); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dest, "target"), "original")
	assertFile(t, filepath.Join(dest, "f"), "new")
}

func assertFile(t *testing.T, p, want string) {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Mode().IsRegular() {
		t.Fatalf("%s is %v, want a regular file", p, st.Mode())
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s = %q, want %q", p, got, want)
	}
}

// goodTree is a benign archive with every entry type Extract writes.
func goodTree(t testing.TB) []byte {
	return makeTar(t,
		dir("out/"),
		reg("out/a.txt", "hello\n"),
		dir("out/sub/"),
		reg("out/sub/b.txt", strings.Repeat("b", 100000)),
		symlink("out/link", "sub/b.txt"),
		symlink("out/sub/up", "../a.txt"),
		hardlink("out/hard", "out/a.txt"),
		entry{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "out/fifo", Mode: 0o644}},
	)
}

func TestRepackThenExtractRoundTrip(t *testing.T) {
	for _, level := range []int{gzip.NoCompression, gzip.BestSpeed, gzip.DefaultCompression, gzip.BestCompression} {
		var tgz bytes.Buffer
		if err := Repack(context.Background(), bytes.NewReader(goodTree(t)), &tgz, level); err != nil {
			t.Fatalf("level %d: Repack: %v", level, err)
		}
		dest := t.TempDir()
		if err := Extract(context.Background(), &tgz, dest); err != nil {
			t.Fatalf("level %d: Extract: %v", level, err)
		}
		assertFile(t, filepath.Join(dest, "out/a.txt"), "hello\n")
		assertFile(t, filepath.Join(dest, "out/sub/b.txt"), strings.Repeat("b", 100000))
		assertFile(t, filepath.Join(dest, "out/hard"), "hello\n")
		for link, want := range map[string]string{"out/link": "sub/b.txt", "out/sub/up": "../a.txt"} {
			got, err := os.Readlink(filepath.Join(dest, link))
			if err != nil || got != want {
				t.Errorf("level %d: readlink %s = %q, %v; want %q", level, link, got, err, want)
			}
		}
		if _, err := os.Lstat(filepath.Join(dest, "out/fifo")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("level %d: FIFO entry was not skipped: %v", level, err)
		}
	}
}

func TestExtractPlainTar(t *testing.T) {
	dest := t.TempDir()
	if err := Extract(context.Background(), bytes.NewReader(goodTree(t)), dest); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dest, "out/a.txt"), "hello\n")
}

func TestRepackEmptyArchive(t *testing.T) {
	var tgz bytes.Buffer
	if err := Repack(context.Background(), bytes.NewReader(makeTar(t)), &tgz, gzip.DefaultCompression); err != nil {
		t.Fatalf("Repack of an archive without entries = %v", err)
	}
	zr, err := gzip.NewReader(&tgz)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tar.NewReader(zr).Next(); !errors.Is(err, io.EOF) {
		t.Errorf("empty archive repacked into an archive with entries: %v", err)
	}
}

// TestRepackRefusesStreamsCutShort: a stream that ends without tar's
// end-of-archive marker, even cleanly between two entries, is an error.
func TestRepackRefusesStreamsCutShort(t *testing.T) {
	whole := makeTar(t, reg("a", "alpha"), reg("b", "beta"))
	for name, in := range map[string][]byte{
		"empty":                 nil,
		"between entries":       whole[:1024],     // header + one block of "a"
		"after the last entry":  whole[:2048],     // both entries, no marker
		"half the end marker":   whole[:2048+512], // one zero block of two
		"in the middle of data": whole[:512+3],
	} {
		t.Run(name, func(t *testing.T) {
			err := Repack(context.Background(), bytes.NewReader(in), io.Discard, gzip.BestSpeed)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("Repack = %v, want an error wrapping io.ErrUnexpectedEOF", err)
			}
		})
	}
	if err := Repack(context.Background(), bytes.NewReader(whole), io.Discard, gzip.BestSpeed); err != nil {
		t.Errorf("Repack of the whole stream = %v", err)
	}
}

func TestRepackErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		in    io.Reader
		level int
		want  string
	}{
		{"garbage", context.Background(), strings.NewReader(strings.Repeat("not a tar ", 100)), gzip.BestSpeed, "read tar header"},
		{"bad level", context.Background(), bytes.NewReader(goodTree(t)), 42, "invalid compression level"},
		{"cancelled", cancelled, bytes.NewReader(goodTree(t)), gzip.BestSpeed, context.Canceled.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Repack(tc.ctx, tc.in, io.Discard, tc.level)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Repack = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestExtractErrors(t *testing.T) {
	dest := t.TempDir()
	file := filepath.Join(dest, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		dest string
		in   []byte
		want string
	}{
		{"missing destination", context.Background(), filepath.Join(dest, "nope"), goodTree(t), "no such file"},
		{"destination is a file", context.Background(), file, goodTree(t), "not a directory"},
		{"cancelled", cancelled, t.TempDir(), goodTree(t), context.Canceled.Error()},
		{"hard link to a missing file", context.Background(), t.TempDir(), makeTar(t, hardlink("h", "nope")), `"h"`},
		{"hard link to a directory", context.Background(), t.TempDir(), makeTar(t, dir("d/"), hardlink("h", "d")), "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Extract(tc.ctx, bytes.NewReader(tc.in), tc.dest)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Extract = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
