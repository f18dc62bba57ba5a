package docker

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/archive"
)

const (
	testNS  = "argo"
	testPod = "wf-abc"
	testUID = "0b7f3c1e-uid"
)

func testLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// testPodOn puts a pod's containers on f: the POD sandbox, an init
// container, main (exited), wait and a sidecar (running), and a container of
// another pod with the same name but another UID (an earlier pod).
func testPodOn(f *fakeEngine) map[string]*fakeContainer {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	cs := map[string]*fakeContainer{}
	add := func(name, state string, c *fakeContainer) {
		c.Name = "k8s_" + name + "_" + testPod + "_" + testNS + "_" + testUID + "_0"
		c.Labels = podLabels(testNS, testPod, testUID, name)
		c.State = state
		cs[name] = f.add(c)
	}
	add(SandboxContainerName, "running", &fakeContainer{Files: map[string]string{"/tmp/small.txt": "sandbox\n"}})
	add("init", "exited", &fakeContainer{})
	add("main", "exited", &fakeContainer{
		ExitCode: 3,
		Files: map[string]string{
			"/tmp/small.txt":     "small file\n",
			"/tmp/binary.bin":    string(binary),
			"/tmp/link":          "->/tmp/small.txt",
			"/tmp/rel":           "->small.txt",
			"/tmp/loop":          "->/tmp/loop",
			"/tmp/big.bin":       strings.Repeat("x", MaxFileContentsBytes+1),
			"/tmp/dir/":          "",
			"/tmp/dir/a.txt":     "a\n",
			"/tmp/dir/sub/":      "",
			"/tmp/dir/sub/b.txt": "b\n",
			"/etc/os-release":    "NAME=base layer\n",
		},
		Stdout: []string{"out 1\n", "out 2\n"},
		Stderr: []string{"err 1\n"},
	})
	add("wait", "running", &fakeContainer{})
	add("sidecar", "running", &fakeContainer{IgnoreTERM: true})
	add("tty", "exited", &fakeContainer{Tty: true, Stdout: []string{"raw tty output\r\n"}})
	other := &fakeContainer{Name: "k8s_main_" + testPod + "_" + testNS + "_old-uid_0", Labels: podLabels(testNS, testPod, "old-uid", "main"), State: "exited",
		Files: map[string]string{"/tmp/small.txt": "from the earlier pod\n"}}
	f.add(other)
	return cs
}

func newTestExecutor(t *testing.T, f *fakeEngine, mutate ...func(*Config)) *Executor {
	t.Helper()
	cfg := Config{SockPath: f.sock, Namespace: testNS, PodName: testPod, PodUID: testUID}
	for _, m := range mutate {
		m(&cfg)
	}
	x, err := New(cfg, testLog())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// assertErr fails unless err is non-nil, contains every word, and wraps
// every target.
func assertErr(t *testing.T, err error, words []string, targets ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one naming %q", words)
	}
	t.Logf("error: %v", err)
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("error %q does not wrap %v", err, target)
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults", cfg: Config{Namespace: "ns", PodName: "p"}},
		{name: "no pod name", cfg: Config{Namespace: "ns"}, wantErr: "ARGO_POD_NAME"},
		{name: "no namespace", cfg: Config{PodName: "p"}, wantErr: "ARGO_POD_NAMESPACE"},
		{name: "negative find timeout", cfg: Config{Namespace: "ns", PodName: "p", FindTimeout: -time.Second}, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := New(tt.cfg, testLog())
			if tt.wantErr != "" {
				assertErr(t, err, []string{tt.wantErr})
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer x.Close()
			if x.cfg.SockPath != workflow.DefaultDockerSockPath || x.cfg.FindTimeout != DefaultFindTimeout {
				t.Errorf("defaults: sock %q, find timeout %s", x.cfg.SockPath, x.cfg.FindTimeout)
			}
		})
	}
}

func TestNegotiatesAPIVersion(t *testing.T) {
	f := newFakeEngine(t, "1.41")
	testPodOn(f)
	x := newTestExecutor(t, f)
	if _, err := x.ListContainerNames(testCtx(t)); err != nil {
		t.Fatalf("ListContainerNames against an API 1.41 engine: %v", err)
	}
	if _, err := x.GetExitCode(testCtx(t), "main"); err != nil {
		t.Fatalf("GetExitCode: %v", err)
	}
	pings := 0
	for _, r := range f.requestLog() {
		if strings.HasSuffix(r, "/_ping") {
			pings++
			continue
		}
		if !strings.Contains(r, " /v1.41/") {
			t.Errorf("request %q: want API version 1.41 in its path", r)
		}
	}
	if pings == 0 || pings > 2 { // HEAD, and GET only if HEAD fails
		t.Errorf("%d pings, want the version negotiated once", pings)
	}
}

func TestConnectErrors(t *testing.T) {
	tooOld := newFakeEngine(t, "1.24")
	stale := filepath.Join(t.TempDir(), "stale.sock")
	if len(stale) > 100 {
		stale = filepath.Join(os.TempDir(), "argoexec-docker-stale.sock")
		t.Cleanup(func() { os.Remove(stale) })
	}
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	missing := filepath.Join(t.TempDir(), "missing.sock")

	tests := []struct {
		name    string
		sock    string
		dial    func(ctx context.Context, network, addr string) (net.Conn, error)
		words   []string
		targets []error
	}{
		{name: "socket missing", sock: missing, words: []string{missing, "dockerSockPath", "does not exist", "k8sapi", "kubelet"}, targets: []error{fs.ErrNotExist}},
		{name: "permission denied", sock: "/var/run/docker.sock",
			dial: func(context.Context, string, string) (net.Conn, error) {
				return nil, &net.OpError{Op: "dial", Net: "unix", Addr: &net.UnixAddr{Name: "/var/run/docker.sock", Net: "unix"}, Err: os.NewSyscallError("connect", syscall.EACCES)}
			},
			words: []string{"/var/run/docker.sock", "dockerSockPath", "permission denied"}, targets: []error{fs.ErrPermission}},
		{name: "nothing listening", sock: stale, words: []string{stale, "dockerSockPath", "nothing listens"}, targets: []error{syscall.ECONNREFUSED}},
		{name: "engine too old", sock: tooOld.sock, words: []string{tooOld.sock, "dockerSockPath", "1.24", "minimum supported API version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d net.Dialer
			dial := d.DialContext
			if tt.dial != nil {
				dial = tt.dial
			}
			x, err := newExecutor(Config{SockPath: tt.sock, Namespace: testNS, PodName: testPod}, testLog(), dial)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			_, err = x.ListContainerNames(testCtx(t))
			assertErr(t, err, tt.words, tt.targets...)
			// Every operation says the same, not only the first.
			err = x.Wait(testCtx(t), []string{"main"})
			assertErr(t, err, tt.words, tt.targets...)
		})
	}
}

// TestPermissionDeniedRealSocket checks the errno path on a real socket the
// test user may not open; root may open anything, so it runs as non-root only.
func TestPermissionDeniedRealSocket(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root bypasses socket permissions; TestConnectErrors/permission_denied covers the errno")
	}
	f := newFakeEngine(t, "1.41")
	if err := os.Chmod(f.sock, 0); err != nil {
		t.Fatal(err)
	}
	x := newTestExecutor(t, f)
	_, err := x.ListContainerNames(testCtx(t))
	assertErr(t, err, []string{f.sock, "dockerSockPath", "permission denied"}, fs.ErrPermission)
}

func TestListContainerNames(t *testing.T) {
	f := newFakeEngine(t, "1.41")
	testPodOn(f)
	// A restarted sidecar: its second attempt must not add a name.
	f.add(&fakeContainer{Name: "k8s_sidecar_" + testPod + "_" + testNS + "_" + testUID + "_1", Labels: podLabels(testNS, testPod, testUID, "sidecar"), State: "running"})
	x := newTestExecutor(t, f)
	got, err := x.ListContainerNames(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"init", "main", "wait", "sidecar", "tty"}
	if !slices.Equal(got, want) {
		t.Errorf("ListContainerNames = %v, want %v (creation order, no POD sandbox, no duplicates)", got, want)
	}
}

func TestGetFileContents(t *testing.T) {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	tests := []struct {
		name      string
		container string
		path      string
		want      string
		words     []string
		targets   []error
	}{
		{name: "small", container: "main", path: "/tmp/small.txt", want: "small file\n"},
		{name: "binary", container: "main", path: "/tmp/binary.bin", want: string(binary)},
		{name: "image layer", container: "main", path: "/etc/os-release", want: "NAME=base layer\n"},
		{name: "absolute symlink", container: "main", path: "/tmp/link", want: "small file\n"},
		{name: "relative symlink", container: "main", path: "/tmp/rel", want: "small file\n"},
		{name: "symlink loop", container: "main", path: "/tmp/loop", words: []string{"/tmp/loop", "symbolic links"}},
		{name: "directory", container: "main", path: "/tmp/dir", words: []string{"/tmp/dir", "not a regular file"}},
		{name: "too large", container: "main", path: "/tmp/big.bin", words: []string{"/tmp/big.bin", "artifact"}},
		{name: "missing file", container: "main", path: "/nonexistent/missing.txt", words: []string{"main", "/nonexistent/missing.txt", "Could not find"}},
		{name: "container not found", container: "nope", path: "/tmp/small.txt", targets: []error{ErrContainerNotFound},
			words: []string{"nope", testNS + "/" + testPod, LabelPodNamespace + "=" + testNS, LabelPodName + "=" + testPod, LabelPodUID + "=" + testUID, LabelContainerName + "=nope", "k8sapi", "kubelet"}},
		{name: "sandbox is not a container", container: SandboxContainerName, path: "/tmp/small.txt", targets: []error{ErrContainerNotFound}},
	}
	f := newFakeEngine(t, "1.41")
	testPodOn(f)
	x := newTestExecutor(t, f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := x.GetFileContents(testCtx(t), tt.container, tt.path)
			if tt.words != nil || tt.targets != nil {
				assertErr(t, err, tt.words, tt.targets...)
				return
			}
			if err != nil {
				t.Fatalf("GetFileContents: %v", err)
			}
			if got != tt.want {
				t.Errorf("GetFileContents = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewestAttempt(t *testing.T) {
	f := newFakeEngine(t, "1.41")
	labels := func(restarts string) map[string]string {
		l := podLabels(testNS, testPod, testUID, "main")
		if restarts != "" {
			l[LabelRestartCount] = restarts
		}
		return l
	}
	// Listed out of order, created out of order: the restart count decides.
	f.add(&fakeContainer{Name: "k8s_main_x_1", Labels: labels("1"), Created: 30, State: "exited", Files: map[string]string{"/f": "attempt 1"}})
	f.add(&fakeContainer{Name: "k8s_main_x_2", Labels: labels("2"), Created: 20, State: "running", Files: map[string]string{"/f": "attempt 2"}})
	f.add(&fakeContainer{Name: "k8s_main_x_0", Labels: labels("0"), Created: 10, State: "exited", Files: map[string]string{"/f": "attempt 0"}})
	x := newTestExecutor(t, f)
	got, err := x.GetFileContents(testCtx(t), "main", "/f")
	if err != nil {
		t.Fatal(err)
	}
	if got != "attempt 2" {
		t.Errorf("read %q, want the newest attempt's file", got)
	}
}

func TestCopyFile(t *testing.T) {
	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	tw.WriteHeader(&tar.Header{Name: "../../etc/evil", Typeflag: tar.TypeReg, Size: 4, Mode: 0o644})
	tw.Write([]byte("evil"))
	tw.Close()

	tests := []struct {
		name      string
		container string
		src       string
		level     int
		want      map[string]string
		words     []string
		targets   []error
	}{
		{name: "file", container: "main", src: "/tmp/small.txt", level: gzip.DefaultCompression, want: map[string]string{"small.txt": "small file\n"}},
		{name: "file uncompressed", container: "main", src: "/tmp/small.txt", level: gzip.NoCompression, want: map[string]string{"small.txt": "small file\n"}},
		{name: "directory", container: "main", src: "/tmp/dir", level: gzip.BestSpeed, want: map[string]string{"dir/": "", "dir/a.txt": "a\n", "dir/sub/": "", "dir/sub/b.txt": "b\n"}},
		{name: "image layer", container: "main", src: "/etc/os-release", level: gzip.DefaultCompression, want: map[string]string{"os-release": "NAME=base layer\n"}},
		{name: "missing", container: "main", src: "/nonexistent/dir", level: gzip.DefaultCompression, words: []string{"main", "/nonexistent/dir", "Could not find"}},
		{name: "escaping entry", container: "evil", src: "/tmp/x", level: gzip.DefaultCompression, words: []string{"evil", "../../etc/evil"}, targets: []error{archive.ErrUnsafeEntry}},
		{name: "bad level", container: "main", src: "/tmp/small.txt", level: 42, words: []string{"/tmp/small.txt", "42"}},
		{name: "container not found", container: "nope", src: "/tmp/x", level: gzip.DefaultCompression, words: []string{LabelContainerName + "=nope"}, targets: []error{ErrContainerNotFound}},
	}
	f := newFakeEngine(t, "1.41")
	testPodOn(f)
	f.add(&fakeContainer{Name: "k8s_evil", Labels: podLabels(testNS, testPod, testUID, "evil"), State: "exited", RawArchive: evil.Bytes()})
	x := newTestExecutor(t, f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			dest := filepath.Join(dir, "out.tgz")
			err := x.CopyFile(testCtx(t), tt.container, tt.src, dest, tt.level)
			if tt.words != nil || tt.targets != nil {
				assertErr(t, err, tt.words, tt.targets...)
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Errorf("failed copy left %v in the destination folder", left)
				}
				return
			}
			if err != nil {
				t.Fatalf("CopyFile: %v", err)
			}
			got := readTGZ(t, dest)
			if len(got) != len(tt.want) {
				t.Errorf("entries %v, want %v", got, tt.want)
			}
			for n, w := range tt.want {
				if g, ok := got[n]; !ok || g != w {
					t.Errorf("entry %s = %q (present %v), want %q", n, g, ok, w)
				}
			}
		})
	}
}

func readTGZ(t *testing.T, p string) map[string]string {
	t.Helper()
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatalf("%s is not gzip: %v", p, err)
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
		b, _ := io.ReadAll(tr)
		out[hdr.Name] = string(b)
	}
}

func TestGetOutputStream(t *testing.T) {
	tests := []struct {
		name      string
		container string
		combined  bool
		want      string
		targets   []error
	}{
		{name: "stdout alone", container: "main", want: "out 1\nout 2\n"},
		{name: "combined, interleaved as written", container: "main", combined: true, want: "out 1\nerr 1\nout 2\n"},
		{name: "tty", container: "tty", want: "raw tty output\r\n"},
		{name: "container not found", container: "nope", targets: []error{ErrContainerNotFound}},
	}
	f := newFakeEngine(t, "1.41")
	testPodOn(f)
	x := newTestExecutor(t, f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, err := x.GetOutputStream(testCtx(t), tt.container, tt.combined)
			if tt.targets != nil {
				assertErr(t, err, []string{tt.container}, tt.targets...)
				return
			}
			if err != nil {
				t.Fatalf("GetOutputStream: %v", err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("log = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGetOutputStreamCloseEarly(t *testing.T) {
	f := newFakeEngine(t, "1.41")
	f.add(&fakeContainer{Name: "k8s_chatty", Labels: podLabels(testNS, testPod, testUID, "chatty"), State: "exited",
		Stdout: slices.Repeat([]string{strings.Repeat("y", 1000) + "\n"}, 5000)})
	x := newTestExecutor(t, f)
	rc, err := x.GetOutputStream(testCtx(t), "chatty", true)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(rc, buf); err != nil {
		t.Fatal(err)
	}
	if err := rc.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := rc.Read(buf); err == nil {
		t.Errorf("Read after Close succeeded")
	}
}

func TestGetExitCode(t *testing.T) {
	tests := []struct {
		name      string
		container string
		want      int
		words     []string
		targets   []error
	}{
		{name: "exited non-zero", container: "main", want: 3},
		{name: "exited zero", container: "init", want: 0},
		{name: "running", container: "wait", words: []string{"wait", "not terminated", "running"}},
		{name: "not found", container: "nope", targets: []error{ErrContainerNotFound}},
	}
	f := newFakeEngine(t, "1.41")
	testPodOn(f)
	x := newTestExecutor(t, f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := x.GetExitCode(testCtx(t), tt.container)
			if tt.words != nil || tt.targets != nil {
				assertErr(t, err, tt.words, tt.targets...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("GetExitCode = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWait(t *testing.T) {
	type step func(t *testing.T, f *fakeEngine, cs map[string]*fakeContainer)
	newMain := func(f *fakeEngine, state string) *fakeContainer {
		return f.add(&fakeContainer{Name: "k8s_late", Labels: podLabels(testNS, testPod, testUID, "late"), State: state})
	}
	tests := []struct {
		name        string
		names       []string
		findTimeout time.Duration
		noEvents    bool
		// while runs in the background once Wait is under way.
		while   step
		ctx     func(context.Context) (context.Context, context.CancelFunc)
		words   []string
		targets []error
		maxTime time.Duration
	}{
		{name: "already exited", names: []string{"init", "main"}, maxTime: 2 * time.Second},
		{name: "running, then exits", names: []string{"wait"},
			while: func(t *testing.T, f *fakeEngine, cs map[string]*fakeContainer) {
				f.awaitRequest(t, "/wait")
				f.stop(cs["wait"], 0)
			}},
		{name: "not yet created, then created, started and exits", names: []string{"late"},
			while: func(t *testing.T, f *fakeEngine, cs map[string]*fakeContainer) {
				f.awaitRequest(t, "GET /events")
				c := newMain(f, "created")
				f.start(c)
				f.awaitRequest(t, "/wait")
				f.stop(c, 0)
			}},
		{name: "found by backoff when events fail", names: []string{"late"}, noEvents: true,
			while: func(t *testing.T, f *fakeEngine, cs map[string]*fakeContainer) {
				f.awaitRequest(t, "GET /events")
				c := newMain(f, "running")
				f.awaitRequest(t, "/wait")
				f.stop(c, 0)
			}},
		{name: "created but never started", names: []string{"late"}, findTimeout: 300 * time.Millisecond,
			while: func(t *testing.T, f *fakeEngine, cs map[string]*fakeContainer) { newMain(f, "created") },
			words: []string{"late", "did not start within 300ms", LabelContainerName + "=late"}, maxTime: 3 * time.Second},
		{name: "never found", names: []string{"main", "ghost"}, findTimeout: 300 * time.Millisecond,
			words:   []string{"ghost", testNS + "/" + testPod, "not found within 300ms", LabelPodUID + "=" + testUID, LabelContainerName + "=ghost", "k8sapi", "kubelet"},
			targets: []error{ErrContainerNotFound}, maxTime: 3 * time.Second},
		{name: "ctx cancelled while running", names: []string{"wait"},
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 300*time.Millisecond)
			},
			words: []string{"wait"}, targets: []error{context.DeadlineExceeded}, maxTime: 3 * time.Second},
		{name: "ctx cancelled while finding", names: []string{"ghost"},
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 300*time.Millisecond)
			},
			words: []string{"ghost"}, targets: []error{context.DeadlineExceeded}, maxTime: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine(t, "1.41")
			f.noEvents = tt.noEvents
			cs := testPodOn(f)
			x := newTestExecutor(t, f, func(c *Config) {
				if tt.findTimeout != 0 {
					c.FindTimeout = tt.findTimeout
				}
			})
			ctx := testCtx(t)
			if tt.ctx != nil {
				var cancel context.CancelFunc
				ctx, cancel = tt.ctx(ctx)
				defer cancel()
			}
			done := make(chan struct{})
			if tt.while != nil {
				go func() {
					defer close(done)
					tt.while(t, f, cs)
				}()
			} else {
				close(done)
			}
			start := time.Now()
			err := x.Wait(ctx, tt.names)
			took := time.Since(start)
			<-done
			if tt.words != nil || tt.targets != nil {
				assertErr(t, err, tt.words, tt.targets...)
			} else if err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if tt.maxTime != 0 && took > tt.maxTime {
				t.Errorf("Wait took %s, want at most %s", took, tt.maxTime)
			}
			if n := f.subscribers(); n != 0 {
				// Give the server a moment to see the closed stream.
				deadline := time.Now().Add(2 * time.Second)
				for f.subscribers() != 0 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if n := f.subscribers(); n != 0 {
					t.Errorf("%d events streams still open after Wait returned", n)
				}
			}
		})
	}
}

func TestKill(t *testing.T) {
	const grace = 300 * time.Millisecond
	tests := []struct {
		name    string
		names   []string
		signals map[string][]string
		words   []string
		targets []error
		minTime time.Duration
		maxTime time.Duration
	}{
		{name: "exits on SIGTERM", names: []string{"wait"}, signals: map[string][]string{"wait": {"SIGTERM"}}, maxTime: grace},
		{name: "ignores SIGTERM: SIGKILL after grace", names: []string{"sidecar"}, signals: map[string][]string{"sidecar": {"SIGTERM", "SIGKILL"}}, minTime: grace, maxTime: grace + 2*time.Second},
		{name: "in parallel", names: []string{"sidecar", "wait", "sidecar2"}, signals: map[string][]string{"sidecar": {"SIGTERM", "SIGKILL"}, "sidecar2": {"SIGTERM", "SIGKILL"}, "wait": {"SIGTERM"}}, minTime: grace, maxTime: 2 * grace},
		{name: "already exited: skipped", names: []string{"main"}, signals: map[string][]string{"main": nil}, maxTime: grace},
		{name: "not found", names: []string{"wait", "ghost"}, signals: map[string][]string{"wait": {"SIGTERM"}}, words: []string{"ghost", LabelContainerName + "=ghost"}, targets: []error{ErrContainerNotFound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine(t, "1.41")
			cs := testPodOn(f)
			cs["sidecar2"] = f.add(&fakeContainer{Name: "k8s_sidecar2", Labels: podLabels(testNS, testPod, testUID, "sidecar2"), State: "running", IgnoreTERM: true})
			x := newTestExecutor(t, f)
			start := time.Now()
			err := x.Kill(testCtx(t), tt.names, grace)
			took := time.Since(start)
			if tt.words != nil || tt.targets != nil {
				assertErr(t, err, tt.words, tt.targets...)
			} else if err != nil {
				t.Fatalf("Kill: %v", err)
			}
			for name, want := range tt.signals {
				if got := f.signalsOf(cs[name]); !slices.Equal(got, want) {
					t.Errorf("%s got signals %v, want %v", name, got, want)
				}
				if f.stateOf(cs[name]) == "running" {
					t.Errorf("%s still running after Kill", name)
				}
			}
			if took < tt.minTime || (tt.maxTime != 0 && took > tt.maxTime) {
				t.Errorf("Kill took %s, want between %s and %s", took, tt.minTime, tt.maxTime)
			}
		})
	}
}

func TestKillCtxCancelled(t *testing.T) {
	f := newFakeEngine(t, "1.41")
	testPodOn(f)
	x := newTestExecutor(t, f)
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := x.Kill(ctx, []string{"sidecar"}, time.Hour)
	assertErr(t, err, []string{"sidecar"}, context.DeadlineExceeded)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Kill took %s to honour a 200ms ctx", d)
	}
}

func TestArchiveErrorMissingPathIsNotExist(t *testing.T) {
	err := archiveError("0123456789abcdef", "/tmp/none", fmt.Errorf("daemon: %w", cerrdefs.ErrNotFound))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/tmp/none") {
		t.Fatalf("err = %v; want it to wrap fs.ErrNotExist and name the path", err)
	}
	if err := archiveError("0123456789abcdef", "/x", errors.New("boom")); errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a non-404 error wraps fs.ErrNotExist: %v", err)
	}
}

// TestWaitCrossCheckedWithPodStatus: the engine shows main running for
// ever (it missed the exit) while the pod's status says it terminated; Wait
// ends Config.StatusBound (on the fake clock) after the status first said
// so, with an error naming both. A status that agrees with the engine, or
// names another attempt of the container, or cannot be read, changes
// nothing.
func TestWaitCrossCheckedWithPodStatus(t *testing.T) {
	const bound, poll = 30 * time.Second, 5 * time.Second
	terminatedPod := func(cid string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "stuck", ContainerID: cid,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
				FinishedAt: metav1.NewTime(time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC))}},
		}}}}
	}
	for _, tt := range []struct {
		name string
		// status returns what the pod's status says, given the container's ID.
		status  func(id string) (*corev1.Pod, error)
		wantErr []string // nil: Wait must still be waiting when the engine reports the exit
	}{
		{name: "status says terminated, engine never agrees", status: func(id string) (*corev1.Pod, error) { return terminatedPod("docker://" + id), nil },
			wantErr: []string{"pod's status (the kubelet) says container stuck terminated", "exit code 0", "Docker Engine still shows container", "running 30s later", "docker inspect", "2026-12-02T04:00:00Z"}},
		{name: "status names no container ID", status: func(string) (*corev1.Pod, error) { return terminatedPod(""), nil },
			wantErr: []string{"says container stuck terminated"}},
		{name: "status of another attempt", status: func(string) (*corev1.Pod, error) { return terminatedPod("docker://0ther"), nil }},
		{name: "status running", status: func(string) (*corev1.Pod, error) {
			return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "stuck", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}, nil
		}},
		{name: "status cannot be read", status: func(string) (*corev1.Pod, error) { return nil, errors.New("forbidden") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine(t, "1.45")
			c := f.add(&fakeContainer{Name: "k8s_stuck", Labels: podLabels(testNS, testPod, testUID, "stuck"), State: "running"})
			clk := clocktesting.NewFakeClock(time.Now())
			polls := make(chan struct{}, 100)
			x := newTestExecutor(t, f, func(cfg *Config) {
				cfg.StatusBound, cfg.StatusPoll, cfg.Clock = bound, poll, clk
				cfg.PodStatus = func(context.Context) (*corev1.Pod, error) {
					defer func() { polls <- struct{}{} }()
					return tt.status(c.ID)
				}
			})
			ctx := testCtx(t)
			done := make(chan error, 1)
			go func() { done <- x.Wait(ctx, []string{"stuck"}) }()
			f.awaitRequest(t, "/wait")
			// Each poll, then a step of the clock to the next; bound/poll+2
			// polls are enough for the bound to pass.
			for i := 0; i < int(bound/poll)+2; i++ {
				select {
				case <-polls:
				case err := <-done:
					if tt.wantErr == nil {
						t.Fatalf("Wait returned %v while the engine shows the container running", err)
					}
					assertErr(t, err, tt.wantErr)
					return
				case <-ctx.Done():
					t.Fatal("no status poll")
				}
				for !clk.HasWaiters() {
					runtime.Gosched()
				}
				clk.Step(poll)
			}
			if tt.wantErr != nil {
				select {
				case err := <-done:
					assertErr(t, err, tt.wantErr)
				case <-ctx.Done():
					t.Fatalf("Wait still waiting %s on the clock after the status said terminated; want it to end after %s", time.Duration(int(bound/poll)+2)*poll, bound)
				}
				return
			}
			f.stop(c, 0)
			if err := <-done; err != nil {
				t.Errorf("Wait = %v once the engine saw the exit", err)
			}
		})
	}
}
