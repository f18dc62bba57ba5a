package artifacts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// memDriver is a Driver over objects in memory, keyed by s3 key.
type memDriver map[string][]byte

func (m memDriver) Load(_ context.Context, art wf.Artifact, localPath string) error {
	b, ok := m[art.S3.Key]
	if !ok {
		return fmt.Errorf("mem: %s: %w", art.S3.Key, ErrNotFound)
	}
	return os.WriteFile(localPath, b, 0o644)
}

func (m memDriver) Save(_ context.Context, localPath string, art wf.Artifact) (Object, error) {
	b, err := os.ReadFile(localPath)
	if err != nil {
		return Object{}, err
	}
	m[art.S3.Key] = b
	return Object{Key: art.S3.Key, Size: int64(len(b))}, nil
}

func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestStoreLoad(t *testing.T) {
	objects := memDriver{
		"file.tgz":    tgz(t, map[string]string{"out.txt": "one file"}),
		"dir.tgz":     tgz(t, map[string]string{"d/a": "A", "d/b": "B"}),
		"two.tgz":     tgz(t, map[string]string{"a": "A", "b": "B"}),
		"plain":       []byte("not a tarball"),
		"x":           []byte("x"),
		"hostile.tgz": tgz(t, map[string]string{"../../escape": "x"}),
	}
	repo := wf.S3Bucket{Endpoint: "s3:9000", Bucket: "b"}
	s := NewStore(StoreConfig{Drivers: map[string]Driver{wf.KindS3: objects}, Allow: RepositoryOnly(repo)}, discard())
	key := func(k string) wf.Artifact { return wf.Artifact{Name: "a", S3: &wf.S3Artifact{Key: k}} }
	none := key("file.tgz")
	none.Archive = &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}
	elsewhere := key("k")
	elsewhere.S3.Bucket = "other"

	tests := []struct {
		name     string
		art      wf.Artifact
		files    map[string]string // relative to dest; "" is dest itself
		wantErr  string
		notFound bool
	}{
		{name: "raw", art: wf.Artifact{Raw: &wf.RawArtifact{Data: "\x1f\x8b raw stays as is"}}, files: map[string]string{"": "\x1f\x8b raw stays as is"}},
		{name: "tarball of one file", art: key("file.tgz"), files: map[string]string{"": "one file"}},
		{name: "tarball of one directory", art: key("dir.tgz"), files: map[string]string{"a": "A", "b": "B"}},
		{name: "tarball of two entries", art: key("two.tgz"), files: map[string]string{"a": "A", "b": "B"}},
		{name: "not gzip", art: key("plain"), files: map[string]string{"": "not a tarball"}},
		{name: "one byte", art: key("x"), files: map[string]string{"": "x"}},
		{name: "archive none keeps the tarball", art: none, files: map[string]string{"": string(objects["file.tgz"])}},
		{name: "missing", art: key("nope"), wantErr: "nope: object not found", notFound: true},
		{name: "entry escaping", art: key("hostile.tgz"), wantErr: "unsafe archive entry"},
		{name: "another bucket", art: elsewhere, wantErr: "s3://other/k at  is not in the artifact repository (s3://b at s3:9000)"},
		{name: "no location", art: wf.Artifact{Name: "n"}, wantErr: `artifact "n" has no location argoexec can use`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "in")
			err := s.Load(context.Background(), tt.art, dest)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if errors.Is(err, ErrNotFound) != tt.notFound {
					t.Errorf("errors.Is(err, ErrNotFound) = %v", !tt.notFound)
				}
				if entries, _ := os.ReadDir(parent); len(entries) != 0 {
					t.Errorf("a failed load left %v beside dest", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for rel, want := range tt.files {
				b, err := os.ReadFile(filepath.Join(dest, rel))
				if err != nil || string(b) != want {
					t.Errorf("%q = %q, %v; want %q", rel, b, err, want)
				}
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("beside dest: %v; want only dest", entries)
			}
			if _, err := os.Stat(filepath.Join(parent, "..", "escape")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("wrote outside: %v", err)
			}
		})
	}
}

func TestStoreSave(t *testing.T) {
	objects := memDriver{}
	src := filepath.Join(t.TempDir(), "f")
	os.WriteFile(src, []byte("data"), 0o644)
	tests := []struct {
		name    string
		store   *Store
		art     wf.Artifact
		wantErr string
		notSupp bool
	}{
		{name: "s3", store: NewStore(StoreConfig{Drivers: map[string]Driver{wf.KindS3: objects}}, discard()), art: wf.Artifact{S3: &wf.S3Artifact{Key: "k"}}},
		{name: "no s3 driver", store: NewStore(StoreConfig{}, discard()), art: wf.Artifact{S3: &wf.S3Artifact{Key: "k"}}, wantErr: "no S3 repository is configured"},
		{name: "http", store: NewStore(StoreConfig{}, discard()), art: wf.Artifact{Name: "h", HTTP: &wf.HTTPArtifact{URL: "http://x"}}, wantErr: "http artifacts are inputs only", notSupp: true},
		{name: "raw", store: NewStore(StoreConfig{}, discard()), art: wf.Artifact{Name: "r", Raw: &wf.RawArtifact{}}, wantErr: "raw artifacts are inputs only", notSupp: true},
		{name: "policy", store: NewStore(StoreConfig{Drivers: map[string]Driver{wf.KindS3: objects}, Allow: RepositoryOnly(wf.S3Bucket{Bucket: "b"})}, discard()),
			art: wf.Artifact{S3: &wf.S3Artifact{Key: "k", S3Bucket: wf.S3Bucket{Bucket: "c"}}}, wantErr: "only the repository's bucket is allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.store.Save(context.Background(), src, tt.art)
			if tt.wantErr == "" {
				if err != nil || obj.Size != 4 || string(objects["k"]) != "data" {
					t.Fatalf("object %+v, err %v", obj, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrNotSupported) != tt.notSupp {
				t.Fatalf("err = %v, want %q (not supported: %v)", err, tt.wantErr, tt.notSupp)
			}
		})
	}
}

func TestUnarchived(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    map[string]string // what the returned path holds; "" for the file itself
		wantErr string
	}{
		{name: "a file", files: map[string]string{"f": "body"}, want: map[string]string{"": "body"}},
		{name: "a directory", files: map[string]string{"d/a": "A", "d/s/b": "B"}, want: map[string]string{"a": "A", "s/b": "B"}},
		{name: "two entries", files: map[string]string{"a": "A", "b": "B"}, wantErr: "neither a regular file nor a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tgzPath := filepath.Join(dir, "a.tgz")
			if err := os.WriteFile(tgzPath, tgz(t, tt.files), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := Unarchived(context.Background(), tgzPath, dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for rel, body := range tt.want {
				if b, err := os.ReadFile(filepath.Join(p, rel)); err != nil || string(b) != body {
					t.Errorf("%s/%s = %q, %v; want %q", p, rel, b, err, body)
				}
			}
		})
	}
}

func TestCompressionLevel(t *testing.T) {
	level := int32(9)
	for _, tt := range []struct {
		archive *wf.ArchiveStrategy
		want    int
	}{
		{nil, gzip.DefaultCompression},
		{&wf.ArchiveStrategy{None: &wf.NoneStrategy{}}, gzip.NoCompression},
		{&wf.ArchiveStrategy{Tar: &wf.TarStrategy{CompressionLevel: &level}}, 9},
	} {
		if got := CompressionLevel(wf.Artifact{Archive: tt.archive}); got != tt.want {
			t.Errorf("CompressionLevel(%+v) = %d, want %d", tt.archive, got, tt.want)
		}
	}
}

// TestStoreCheck: every artifact is judged before any transfer, naming the
// artifact, the kind and what argoexec has instead.
func TestStoreCheck(t *testing.T) {
	configured := NewStore(StoreConfig{Drivers: map[string]Driver{wf.KindS3: memDriver{}}}, discard())
	bare := NewStore(StoreConfig{}, discard())
	tests := []struct {
		name    string
		store   *Store
		art     wf.Artifact
		output  bool
		wantErr string // empty: allowed
		notSup  bool
	}{
		{name: "s3 input", store: configured, art: wf.Artifact{Name: "a", S3: &wf.S3Artifact{Key: "k"}}},
		{name: "s3 output", store: configured, art: wf.Artifact{Name: "a", S3: &wf.S3Artifact{Key: "k"}}, output: true},
		{name: "an output without a location goes to the repository", store: bare, art: wf.Artifact{Name: "a"}, output: true},
		{name: "an input without a location", store: bare, art: wf.Artifact{Name: "a"}, wantErr: `artifact "a" has no location argoexec can use: set one of s3, http, raw, git, artifactory, oss, gcs`},
		{name: "gcs unconfigured (our controller passes no gcs credentials)", store: configured, art: wf.Artifact{Name: "g", GCS: &wf.GCSArtifact{Key: "k"}},
			wantErr: `artifact "g": no gcs store is configured: the controller passed no gcs repository or credentials`},
		{name: "gcs output", store: NewStore(StoreConfig{Drivers: map[string]Driver{wf.KindGCS: memDriver{}}}, discard()), art: wf.Artifact{Name: "g", GCS: &wf.GCSArtifact{Key: "k"}}, output: true},
		{name: "hdfs input: what to use instead", store: configured, art: wf.Artifact{Name: "h", HDFS: &wf.HDFSArtifact{Path: "/p"}},
			wantErr: `artifact "h": not supported: argoexec has no hdfs store (it has s3, http, raw, git, artifactory, oss, gcs); store the artifact in an S3-compatible bucket instead`, notSup: true},
		{name: "hdfs output: what to use instead", store: configured, art: wf.Artifact{Name: "h", HDFS: &wf.HDFSArtifact{Path: "/p"}}, output: true,
			wantErr: `or run this workflow with Argo's own argoexec image`, notSup: true},
		{name: "http cannot be saved", store: configured, art: wf.Artifact{Name: "h", HTTP: &wf.HTTPArtifact{URL: "http://x"}}, output: true,
			wantErr: `an output cannot be saved to its http location, which only loads (outputs go to s3, artifactory, oss, gcs)`, notSup: true},
		{name: "s3 with no repository", store: bare, art: wf.Artifact{Name: "a", S3: &wf.S3Artifact{Key: "k"}}, wantErr: `artifact "a": no S3 repository is configured`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.store.Check(tt.art, tt.output)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check: %v, want one containing %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrNotSupported) != tt.notSup {
				t.Errorf("errors.Is(ErrNotSupported) = %v, want %v", !tt.notSup, tt.notSup)
			}
		})
	}
}

// TestKindsComplete: every registered kind is one of Argo's location
// fields and builds a driver from an Env with a default of its kind.
func TestKindsComplete(t *testing.T) {
	argo := map[string]bool{wf.KindS3: true, wf.KindGit: true, wf.KindHTTP: true, wf.KindArtifactory: true, wf.KindHDFS: true, wf.KindRaw: true, wf.KindOSS: true, wf.KindGCS: true}
	env := Env{Default: wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}}}, Credentials: StaticKeys{AccessKey: "a", SecretKey: "s"}, Log: discard(), Git: GitCommand{}}
	for _, k := range Kinds() {
		if !argo[k.Name] {
			t.Errorf("kind %q is not a field of Argo's ArtifactLocation", k.Name)
		}
		d, err := k.New(env)
		if err != nil || d == nil {
			t.Errorf("kind %q: New = %v, %v", k.Name, d, err)
		}
	}
	s, err := NewStoreFor(Env{RepositoryOnly: true, Log: discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(wf.Artifact{Name: "a", S3: &wf.S3Artifact{Key: "k"}}, false); err == nil {
		t.Error("RepositoryOnly with no repository configured an s3 store")
	}
}
