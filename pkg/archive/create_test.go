package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func listTgz(t *testing.T, b []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			out[hdr.Name] = "-> " + hdr.Linkname
		case tar.TypeDir:
			out[hdr.Name] = "dir"
		default:
			body, _ := io.ReadAll(tr)
			out[hdr.Name] = string(body)
		}
	}
}

func TestCreate(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "work/out/sub"), 0o755))
	must(os.WriteFile(filepath.Join(root, "work/out/a.txt"), []byte("a"), 0o644))
	must(os.WriteFile(filepath.Join(root, "work/out/sub/b.txt"), []byte("b"), 0o600))
	must(os.Symlink("/etc/passwd", filepath.Join(root, "work/out/evil")))
	must(os.Symlink("../../../../etc", filepath.Join(root, "work/escape")))

	tests := []struct {
		name    string
		rel     string
		want    map[string]string
		wantErr string
	}{
		{name: "directory, links stored not followed", rel: "/work/out", want: map[string]string{
			"out/": "dir", "out/a.txt": "a", "out/sub/": "dir", "out/sub/b.txt": "b", "out/evil": "-> /etc/passwd",
		}},
		{name: "single file", rel: "work/out/a.txt", want: map[string]string{"a.txt": "a"}},
		{name: "top-level link is stored as a link", rel: "work/out/evil", want: map[string]string{"evil": "-> /etc/passwd"}},
		{name: "path through a link out of the root", rel: "work/escape/passwd", wantErr: "escapes from parent"},
		{name: "missing", rel: "work/nope", wantErr: "no such file or directory"},
		{name: "climbs out", rel: "../x", wantErr: "is not a path beneath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Create(context.Background(), root, tt.rel, &buf, gzip.BestSpeed)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := listTgz(t, buf.Bytes())
			if len(got) != len(tt.want) {
				t.Errorf("entries = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("entry %s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}
