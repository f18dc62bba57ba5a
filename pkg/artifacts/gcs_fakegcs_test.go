package artifacts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// startFakeGCS runs fsouza/fake-gcs-server (hack/lib/build.sh builds it
// into /var/cache/argoexec/bin) on a free port of 127.0.0.1, in memory,
// with the given buckets, and returns its host:port, as
// STORAGE_EMULATOR_HOST takes it; the test is skipped when the binary is
// not there.
func startFakeGCS(t *testing.T, buckets ...string) string {
	t.Helper()
	bin, err := exec.LookPath("fake-gcs-server")
	if err != nil {
		cache := os.Getenv("ARGOEXEC_CACHE")
		if cache == "" {
			cache = "/var/cache/argoexec"
		}
		bin = filepath.Join(cache, "bin", "fake-gcs-server")
		if _, serr := os.Stat(bin); serr != nil {
			t.Skipf("fake-gcs-server is neither on PATH nor at %s (hack/deps.sh builds it: hack/lib/build.sh fake-gcs-server)", bin)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	stderr := &lockedBuffer{}
	cmd := exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", fmt.Sprint(port), "-backend", "memory", "-log-level", "warn")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	host := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/storage/v1/b")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("fake-gcs-server exited: %v: %s", waitErr, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake-gcs-server did not answer on %s: %s", host, stderr.String())
		}
	}
	for _, b := range buckets {
		resp, err := http.Post("http://"+host+"/storage/v1/b?project=test", "application/json", strings.NewReader(fmt.Sprintf(`{"name":%q}`, b)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("create bucket %s: %s", b, resp.Status)
		}
	}
	return host
}

// TestGCSFakeServer: against a real GCS emulator, through the Store as
// init and wait use it: an output tarball saved and loaded back unpacked;
// a directory (archive: none) saved file by file and loaded back as the
// tree; a missing object, a missing bucket and a server that is gone give
// the errors that say so; List lists a prefix.
func TestGCSFakeServer(t *testing.T) {
	host := startFakeGCS(t, "argo")
	ctx := context.Background()
	store := func(emulator string) *Store {
		s, err := NewStoreFor(Env{Default: wf.ArtifactLocation{GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "argo"}}},
			Credentials: SecretFiles{Root: t.TempDir()}, GCS: GCSEndpoints{EmulatorHost: emulator}, Log: discard()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := store(host)

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, several reads
	archive := filepath.Join(t.TempDir(), "out.tgz")
	if err := os.WriteFile(archive, tgz(t, map[string]string{"hello.txt": "hello gcs", "big": string(big)}), 0o644); err != nil {
		t.Fatal(err)
	}
	obj, err := s.Save(ctx, archive, wf.Artifact{Name: "out", GCS: &wf.GCSArtifact{Key: "wf/pod-1/out.tgz"}})
	if err != nil {
		t.Fatalf("Save tarball: %v", err)
	}
	if obj.Key != "wf/pod-1/out.tgz" || obj.SHA256 == "" {
		t.Errorf("saved %+v", obj)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if err := s.Load(ctx, wf.Artifact{Name: "in", GCS: &wf.GCSArtifact{Key: "wf/pod-1/out.tgz"}}, dest); err != nil {
		t.Fatalf("Load tarball: %v", err)
	}
	wantFile(t, filepath.Join(dest, "hello.txt"), "hello gcs")
	wantFile(t, filepath.Join(dest, "big"), string(big))

	tree := filepath.Join(t.TempDir(), "tree")
	mustWrite(t, filepath.Join(tree, "a.txt"), "one\n")
	mustWrite(t, filepath.Join(tree, "sub", "b.txt"), "two\nlines\n")
	mustWrite(t, filepath.Join(tree, "sub", "deeper", "empty"), "")
	none := &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}
	obj, err = s.Save(ctx, tree, wf.Artifact{Name: "tree", Archive: none, GCS: &wf.GCSArtifact{Key: "wf/pod-1/tree"}})
	if err != nil {
		t.Fatalf("Save directory: %v", err)
	}
	if obj.Files != 3 {
		t.Errorf("Save directory stored %d files, want 3", obj.Files)
	}
	got := filepath.Join(t.TempDir(), "tree")
	if err := s.Load(ctx, wf.Artifact{Name: "tree", GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "argo"}, Key: "wf/pod-1/tree"}}, got); err != nil {
		t.Fatalf("Load directory: %v", err)
	}
	for p, want := range map[string]string{"a.txt": "one\n", "sub/b.txt": "two\nlines\n", "sub/deeper/empty": ""} {
		wantFile(t, filepath.Join(got, p), want)
	}

	// A data template's source.artifactPaths: the key as a plain prefix,
	// recursively, as Argo's gcs ListObjects.
	lister := NewGCS(GCSConfig{Endpoints: GCSEndpoints{EmulatorHost: host}, Backoff: 10 * time.Millisecond}, discard())
	for prefix, want := range map[string]string{
		"wf/pod-1/":     "wf/pod-1/out.tgz,wf/pod-1/tree/a.txt,wf/pod-1/tree/sub/b.txt,wf/pod-1/tree/sub/deeper/empty",
		"wf/pod-1/tree": "wf/pod-1/tree/a.txt,wf/pod-1/tree/sub/b.txt,wf/pod-1/tree/sub/deeper/empty",
		"wf/none/":      "",
	} {
		names, err := lister.List(ctx, wf.Artifact{Name: "src", GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "argo"}, Key: prefix}})
		if err != nil || strings.Join(names, ",") != want {
			t.Errorf("List(%q) = %q, %v; want %q", prefix, names, err, want)
		}
	}
	if _, err := lister.List(ctx, wf.Artifact{Name: "src", GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "gone"}, Key: "k"}}); err == nil || !strings.Contains(err.Error(), "the bucket does not exist") {
		t.Errorf("List of a missing bucket: %v, want it to say the bucket does not exist", err)
	}

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadHost := dead.Addr().String()
	dead.Close()
	for _, tt := range []struct {
		name     string
		store    *Store
		art      wf.Artifact
		save     bool
		want     string
		notFound bool
	}{
		{name: "missing object", store: s, art: wf.Artifact{Name: "in", GCS: &wf.GCSArtifact{Key: "wf/nope.tgz"}}, want: "gcs: download gs://argo/wf/nope.tgz: 404", notFound: true},
		{name: "missing bucket", store: s, art: wf.Artifact{Name: "out", GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "gone"}, Key: "k"}}, save: true, want: "the bucket does not exist"},
		{name: "server gone", store: NewStore(StoreConfig{Drivers: map[string]Driver{wf.KindGCS: NewGCS(GCSConfig{Endpoints: GCSEndpoints{EmulatorHost: deadHost}, Backoff: 10 * time.Millisecond}, discard())}}, discard()), art: wf.Artifact{Name: "in", GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "argo"}, Key: "k"}}, want: "the server did not answer (5 tries); is the emulator STORAGE_EMULATOR_HOST=" + deadHost},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.save {
				_, err = tt.store.Save(ctx, archive, tt.art)
			} else {
				err = tt.store.Load(ctx, tt.art, filepath.Join(t.TempDir(), "x"))
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, ErrNotFound) != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", !tt.notFound, tt.notFound)
			}
		})
	}
}
