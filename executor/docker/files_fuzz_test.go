package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
)

// FuzzFirstRegular feeds arbitrary bytes to firstRegular as the archive
// API's tar for one file. It must return exactly the first entry's
// contents when that entry is a whole regular file within
// MaxFileContentsBytes, and an error otherwise.
func FuzzFirstRegular(f *testing.F) {
	tarOf := func(hdr tar.Header, body string) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		hdr.Size = int64(len(body))
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			f.Fatal(err)
		}
		io.WriteString(tw, body)
		tw.Close()
		return buf.Bytes()
	}
	whole := tarOf(tar.Header{Typeflag: tar.TypeReg, Name: "out", Mode: 0o644}, "42\n")
	for _, s := range [][]byte{
		whole,
		whole[:512+2],
		tarOf(tar.Header{Typeflag: tar.TypeReg, Name: "big", Mode: 0o644}, strings.Repeat("x", 4096)),
		tarOf(tar.Header{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o755}, ""),
		tarOf(tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/passwd"}, ""),
		nil,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		got, err := firstRegular(bytes.NewReader(stream))
		tr := tar.NewReader(bytes.NewReader(stream))
		hdr, herr := tr.Next()
		ok := herr == nil && hdr.Typeflag == tar.TypeReg && hdr.Size <= MaxFileContentsBytes
		var want []byte
		if ok {
			var rerr error
			want, rerr = io.ReadAll(tr)
			ok = rerr == nil
		}
		switch {
		case err == nil && !ok:
			t.Fatalf("firstRegular = %q, nil from a stream that holds no whole regular file within the limit", got)
		case err != nil && ok:
			t.Fatalf("firstRegular: %v; the stream holds the whole file %q", err, want)
		case err == nil && got != string(want):
			t.Fatalf("firstRegular = %q, want %q", got, want)
		}
	})
}
