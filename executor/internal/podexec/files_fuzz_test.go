package podexec

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/pkg/archive"
)

// fuzzStreams are the remote tar outputs of the unit tests.
func fuzzStreams(f *testing.F) [][]byte {
	good := makeTarF(f, map[string]string{"out/a": "alpha", "out/b/c": strings.Repeat("c", 3000)})
	one := makeTarF(f, map[string]string{"out": "42\n"})
	return [][]byte{
		one,
		one[:512+4],
		makeTarF(f, map[string]string{"out": "\x00\xff\n"}),
		makeTarF(f, map[string]string{"out": strings.Repeat("x", 11)}),
		makeTarF(f, nil, tar.Header{Typeflag: tar.TypeDir, Name: "out/", Mode: 0o755}),
		makeTarF(f, nil, tar.Header{Typeflag: tar.TypeSymlink, Name: "out/x", Linkname: "/etc"}),
		good,
		good[:1024],
		good[:5000],
		make([]byte, 1024),
		nil,
	}
}

// makeTarF is makeTar for a fuzz target's seeds.
func makeTarF(f *testing.F, files map[string]string, extra ...tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range slices.Sorted(maps.Keys(files)) {
		body := files[n]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(body))}); err != nil {
			f.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	for _, h := range extra {
		if err := tw.WriteHeader(&h); err != nil {
			f.Fatal(err)
		}
	}
	tw.Close()
	return buf.Bytes()
}

// streamExecer is an Execer whose command writes stdout and then ends with
// err (nil: a clean exit, or a dropped connection, which looks the same).
func streamExecer(stdout []byte, fail bool) *fakeExecer {
	return &fakeExecer{run: func(_ context.Context, _ string, _ []string, _ io.Reader, w, stderr io.Writer) error {
		_, err := w.Write(stdout)
		if fail {
			io.WriteString(stderr, "tar: out: Cannot stat: No such file or directory\n")
			return &executor.ExitCodeError{Container: "main", Command: "tar", Code: 2}
		}
		return err
	}}
}

// FuzzGetFileContents feeds arbitrary bytes to GetFileContents as the
// remote tar's output. It must return exactly the first entry's contents
// when that entry is a whole regular file within the limit and the remote
// exited cleanly, and an error naming the path and container otherwise,
// never allocating for a size the stream does not back.
func FuzzGetFileContents(f *testing.F) {
	for _, s := range fuzzStreams(f) {
		f.Add(s, false)
	}
	f.Add(fuzzStreams(f)[0], true)
	f.Fuzz(func(t *testing.T, stdout []byte, fail bool) {
		e := newClient(streamExecer(stdout, fail))
		got, err := e.GetFileContents(context.Background(), "main", "/tmp/out")
		want, ok := firstFile(stdout, e.maxFileBytes)
		switch {
		case err == nil && int64(len(got)) > e.maxFileBytes:
			t.Fatalf("GetFileContents returned %d bytes, over its limit of %d", len(got), e.maxFileBytes)
		case err == nil && (!ok || fail):
			t.Fatalf("GetFileContents = %q, nil from a stream that holds no whole file within the limit (exec failed: %v)", got, fail)
		case err == nil && got != want:
			t.Fatalf("GetFileContents = %q, want %q", got, want)
		case err != nil && ok && !fail:
			t.Fatalf("GetFileContents: %v; the stream holds the whole file %q", err, want)
		case err != nil && (!strings.Contains(err.Error(), "/tmp/out") || !strings.Contains(err.Error(), `"main"`)):
			t.Fatalf("error %q does not name the path and container", err)
		}
	})
}

// firstFile is what a correct reader makes of stream: the contents of its
// first entry if that is a regular file of at most limit bytes that the
// stream holds whole.
func firstFile(stream []byte, limit int64) (string, bool) {
	tr := tar.NewReader(bytes.NewReader(stream))
	hdr, err := tr.Next()
	if err != nil || hdr.Typeflag != tar.TypeReg || hdr.Size > limit {
		return "", false
	}
	b, err := io.ReadAll(tr)
	if err != nil || int64(len(b)) != hdr.Size {
		return "", false
	}
	return string(b), true
}

// FuzzCopyFile feeds arbitrary bytes to CopyFile as the remote tar's
// output. What it writes must be byte for byte what archive.Repack makes of
// the same stream; what Repack refuses, CopyFile refuses, removing its
// destination and naming the path.
func FuzzCopyFile(f *testing.F) {
	for _, s := range fuzzStreams(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		dest := filepath.Join(t.TempDir(), "out.tgz")
		err := newClient(streamExecer(stdout, false)).CopyFile(context.Background(), "main", "/tmp/out", dest, gzip.BestSpeed)
		var want bytes.Buffer
		wantErr := archive.Repack(context.Background(), bytes.NewReader(stdout), &want, gzip.BestSpeed)
		if err != nil {
			if wantErr == nil {
				t.Fatalf("CopyFile: %v; Repack takes the stream", err)
			}
			if errors.Is(wantErr, archive.ErrUnsafeEntry) != errors.Is(err, archive.ErrUnsafeEntry) {
				t.Errorf("CopyFile: %v; Repack: %v", err, wantErr)
			}
			if !strings.Contains(err.Error(), "/tmp/out") {
				t.Errorf("error %q does not name the path", err)
			}
			if _, serr := os.Stat(dest); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("%s left behind after an error", dest)
			}
			return
		}
		if wantErr != nil {
			t.Fatalf("CopyFile took a stream that Repack refuses: %v", wantErr)
		}
		got, rerr := os.ReadFile(dest)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("CopyFile wrote %d bytes, Repack of the same stream %d", len(got), want.Len())
		}
	})
}
