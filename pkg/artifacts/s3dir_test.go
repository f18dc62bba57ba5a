package artifacts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// writeTree makes a directory of files (NAME -> body; a body "->T" is a
// symlink to T) and returns its path.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(body, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// readTree returns every regular file under root, by slash path.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func keysOf(m map[string][]byte) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// TestS3Directory: a directory is saved as Argo v3.3.8's S3 driver stores
// one (PutDirectory: each regular file at KEY/RELATIVE/PATH, no object for
// a directory or a symlink), and a key with no object but objects under it
// loads as that directory (Argo's IsDirectory and GetDirectory), each file
// checked against its recorded SHA-256.
func TestS3Directory(t *testing.T) {
	tests := []struct {
		name, saveKey, loadKey string
	}{
		{name: "key", saveKey: "wf/pod/out", loadKey: "wf/pod/out"},
		{name: "load key with a trailing slash", saveKey: "wf/pod/out", loadKey: "wf/pod/out/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s := newFake(t)
			f.objects["bkt/wf/pod/outside"] = []byte("a sibling key sharing the prefix: not part of the directory")
			f.objects["bkt/wf/pod/out-other/x"] = []byte("nor is this")
			dir := writeTree(t, map[string]string{"a.txt": "A", "sub/b.txt": "B", "sub/deeper/c": "", "link": "->a.txt"})
			obj, err := s.Save(context.Background(), dir, s3Art(tt.saveKey))
			if err != nil {
				t.Fatal(err)
			}
			if obj.Key != "wf/pod/out" || obj.Files != 3 || obj.Size != 2 {
				t.Errorf("object = %+v; want key wf/pod/out, 3 files, 2 bytes", obj)
			}
			want := "bkt/wf/pod/out-other/x,bkt/wf/pod/out/a.txt,bkt/wf/pod/out/sub/b.txt,bkt/wf/pod/out/sub/deeper/c,bkt/wf/pod/outside"
			if got := keysOf(f.objects); got != want {
				t.Errorf("stored %s\nwant    %s", got, want)
			}
			dest := filepath.Join(t.TempDir(), "in")
			if err := s.Load(context.Background(), s3Art(tt.loadKey), dest); err != nil {
				t.Fatal(err)
			}
			got := readTree(t, dest)
			if len(got) != 3 || got["a.txt"] != "A" || got["sub/b.txt"] != "B" || got["sub/deeper/c"] != "" {
				t.Errorf("loaded %v", got)
			}
		})
	}
}

func TestS3DirectoryErrors(t *testing.T) {
	tests := []struct {
		name     string
		objects  map[string]string
		key      string
		wantErr  string
		notFound bool
	}{
		{name: "neither an object nor a directory", key: "wf/nope", wantErr: "no object under wf/nope/: not a directory either", notFound: true,
			objects: map[string]string{"wf/nopex": "a sibling key with the key as its prefix is no directory"}},
		{name: "an object that would land outside", key: "d", wantErr: `object "d/../x" would be written outside the artifact's directory`,
			objects: map[string]string{"d/ok": "ok", "d/../x": "hostile"}},
		{name: "a file of the directory corrupted", key: "d", wantErr: "s3://bkt/d/f: content does not match its recorded SHA-256",
			objects: map[string]string{"d/f": "tampered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, s := newFake(t)
			for k, v := range tt.objects {
				f.objects["bkt/"+k] = []byte(v)
				f.meta["bkt/"+k] = strings.Repeat("0", 64)
			}
			err := s.Load(context.Background(), s3Art(tt.key), filepath.Join(t.TempDir(), "x"))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrNotFound) != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", !tt.notFound, tt.notFound)
			}
		})
	}
}

// TestStoreDirectoryRoundTrip: an output directory with `archive: none`
// goes from wait's archive (Unarchived) to S3 file by file, and a Store
// loads that key as the directory, unchanged by its unpacking.
func TestStoreDirectoryRoundTrip(t *testing.T) {
	f, s := newFake(t)
	store := NewStore(StoreConfig{Drivers: map[string]Driver{"s3": s}}, discard())
	tmp := t.TempDir()
	archived := filepath.Join(tmp, "out.tgz")
	if err := os.WriteFile(archived, tgz(t, map[string]string{"out/a.tgz": "not really gzip", "out/b/c": "C"}), 0o644); err != nil {
		t.Fatal(err)
	}
	none := s3Art("wf/pod/out")
	none.Archive = &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}
	local, err := Unarchived(context.Background(), archived, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(context.Background(), local, none); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(f.objects); got != "bkt/wf/pod/out/a.tgz,bkt/wf/pod/out/b/c" {
		t.Fatalf("stored %s", got)
	}
	for _, in := range []struct {
		name string
		none bool
	}{{"auto-detected", false}, {"archive: none", true}} {
		art := s3Art("wf/pod/out")
		if in.none {
			art.Archive = &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}
		}
		dest := filepath.Join(t.TempDir(), "in")
		if err := store.Load(context.Background(), art, dest); err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		if got := readTree(t, dest); len(got) != 2 || got["a.tgz"] != "not really gzip" || got["b/c"] != "C" {
			t.Errorf("%s: loaded %v", in.name, got)
		}
	}
}
