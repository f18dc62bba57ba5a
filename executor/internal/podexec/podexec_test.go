package podexec

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/pkg/archive"
)

// fakeExecer is a hand-written Execer: run decides what each exec does, and
// every call is recorded.
type fakeExecer struct {
	run func(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error

	mu    sync.Mutex
	calls []string // "container: cmd..."
}

func (f *fakeExecer) Exec(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f.mu.Lock()
	f.calls = append(f.calls, container+": "+strings.Join(cmd, " "))
	f.mu.Unlock()
	return f.run(ctx, container, cmd, stdin, stdout, stderr)
}

func (f *fakeExecer) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// fakeStatus is a hand-written StatusWatcher over a set of running
// containers that the fake execer's kill commands can change.
type fakeStatus struct {
	mu      sync.Mutex
	running map[string]bool
	changed chan struct{} // closed and replaced on every change
}

func newFakeStatus(running ...string) *fakeStatus {
	s := &fakeStatus{running: map[string]bool{}, changed: make(chan struct{})}
	for _, r := range running {
		s.running[r] = true
	}
	return s
}

func (s *fakeStatus) stop(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, name)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *fakeStatus) Running(_ context.Context, containers []string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range containers {
		if s.running[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *fakeStatus) WaitTerminated(ctx context.Context, containers []string) error {
	for {
		s.mu.Lock()
		any, changed := false, s.changed
		for _, c := range containers {
			any = any || s.running[c]
		}
		s.mu.Unlock()
		if !any {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait: %w", ctx.Err())
		case <-changed:
		}
	}
}

func newClient(ex Execer, st StatusWatcher) *Client {
	log, _ := logtest.NewNullLogger()
	return &Client{Backend: "k8sapi", Pod: "argo/wf-1", Exec: ex, Status: st, Log: logrus.NewEntry(log), KillSettle: 50 * time.Millisecond}
}

func TestGetFileContents(t *testing.T) {
	file := func(body string) []byte { return makeTar(t, map[string]string{"out": body}) }
	dirTar := makeTar(t, nil, tar.Header{Typeflag: tar.TypeDir, Name: "out/", Mode: 0o755})
	for _, tc := range []struct {
		name     string
		run      func(ctx context.Context, stdout, stderr io.Writer) error
		want     string
		wantErrs []string
	}{
		{
			name: "ok",
			run: func(_ context.Context, stdout, _ io.Writer) error {
				_, err := stdout.Write(file("42\n"))
				return err
			},
			want: "42\n",
		},
		{
			name: "binary",
			run: func(_ context.Context, stdout, _ io.Writer) error {
				_, err := stdout.Write(file("\x00\xff\n"))
				return err
			},
			want: "\x00\xff\n",
		},
		{
			name: "missing file",
			run: func(_ context.Context, stdout, stderr io.Writer) error {
				io.WriteString(stderr, "tar: out: Cannot stat: No such file or directory\n")
				stdout.Write(make([]byte, 1024))
				return &executor.ExitCodeError{Container: "main", Command: "tar", Code: 2}
			},
			wantErrs: []string{"k8sapi", "argo/wf-1", `"main"`, "/tmp/out", "No such file or directory", "code 2"},
		},
		{
			name: "too large",
			run: func(_ context.Context, stdout, _ io.Writer) error {
				_, err := stdout.Write(file(strings.Repeat("x", 11)))
				return err
			},
			wantErrs: []string{"larger than the limit", "11 bytes", "limit is 10", "/tmp/out", "artifacts"},
		},
		{
			name: "directory",
			run: func(_ context.Context, stdout, _ io.Writer) error {
				_, err := stdout.Write(dirTar)
				return err
			},
			wantErrs: []string{"/tmp/out", "a directory"},
		},
		{
			name: "stream cut short without an error",
			run: func(_ context.Context, stdout, _ io.Writer) error {
				_, err := stdout.Write(file("0123456789")[:512+4])
				return err // a dropped exec connection ends with nil
			},
			wantErrs: []string{"/tmp/out", "unexpected EOF"},
		},
		{
			name: "no tar",
			run: func(context.Context, io.Writer, io.Writer) error {
				return errors.New(`OCI runtime exec failed: exec: "tar": executable file not found in $PATH`)
			},
			wantErrs: []string{"executable file not found", `no "tar" on its PATH`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &fakeExecer{run: func(ctx context.Context, _ string, _ []string, _ io.Reader, stdout, stderr io.Writer) error {
				return tc.run(ctx, stdout, stderr)
			}}
			got, err := newClient(ex, nil).GetFileContents(context.Background(), "main", "/tmp/out", 10)
			if len(tc.wantErrs) == 0 {
				if err != nil || got != tc.want {
					t.Fatalf("GetFileContents = %q, %v; want %q", got, err, tc.want)
				}
			} else {
				if err == nil {
					t.Fatalf("GetFileContents = %q, nil; want an error", got)
				}
				for _, w := range tc.wantErrs {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
			}
			if calls := ex.Calls(); len(calls) != 1 || calls[0] != "main: tar -C /tmp -chf - out" {
				t.Errorf("exec calls = %q", calls)
			}
		})
	}
}

func makeTar(t *testing.T, files map[string]string, extra ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, files[n])
	}
	for _, h := range extra {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	// Pad like tar does, to a 10 KiB record, so the drain after the
	// end-of-archive marker is exercised.
	buf.Write(make([]byte, 10240-buf.Len()%10240))
	return buf.Bytes()
}

func TestCopyFile(t *testing.T) {
	good := makeTar(t, map[string]string{"out/a": "alpha", "out/b/c": strings.Repeat("c", 300000)})
	for _, tc := range []struct {
		name     string
		src      string
		wantCmd  string
		run      func(ctx context.Context, stdout, stderr io.Writer) error
		wantErrs []string
		wantIs   error
	}{
		{
			name:    "directory",
			src:     "/tmp/out/",
			wantCmd: "main: tar -C /tmp -cf - out",
			run: func(_ context.Context, stdout, _ io.Writer) error {
				_, err := stdout.Write(good)
				return err
			},
		},
		{
			name:    "missing path",
			src:     "/tmp/nope",
			wantCmd: "main: tar -C /tmp -cf - nope",
			run: func(_ context.Context, stdout, stderr io.Writer) error {
				io.WriteString(stderr, "tar: nope: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n")
				stdout.Write(make([]byte, 10240)) // GNU tar still writes an empty archive
				return &executor.ExitCodeError{Container: "main", Command: "tar", Code: 2}
			},
			wantErrs: []string{"k8sapi", "argo/wf-1", `"main"`, "/tmp/nope", "Cannot stat", "code 2"},
		},
		{
			name:    "no tar",
			src:     "/tmp/out",
			wantCmd: "main: tar -C /tmp -cf - out",
			run: func(context.Context, io.Writer, io.Writer) error {
				return errors.New(`exec: "tar": executable file not found in $PATH`)
			},
			wantErrs: []string{"/tmp/out", `no "tar" on its PATH`},
		},
		{
			name:    "hostile entry stops a stream that would go on",
			src:     "/tmp/out",
			wantCmd: "main: tar -C /tmp -cf - out",
			run: func(ctx context.Context, stdout, _ io.Writer) error {
				if _, err := stdout.Write(makeTar(t, nil, tar.Header{Typeflag: tar.TypeSymlink, Name: "out/x", Linkname: "/etc"})); err != nil {
					return err
				}
				for { // a remote that never ends unless stopped
					if _, err := stdout.Write(make([]byte, 512)); err != nil {
						return err
					}
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
			},
			wantErrs: []string{`"out/x"`, "/tmp/out"},
			wantIs:   archive.ErrUnsafeEntry,
		},
		{
			name:    "stream cut short between entries, exec without an error",
			src:     "/tmp/out",
			wantCmd: "main: tar -C /tmp -cf - out",
			run: func(_ context.Context, stdout, _ io.Writer) error {
				_, err := stdout.Write(good[:1024]) // out/a whole, nothing after
				return err
			},
			wantErrs: []string{"end-of-archive marker", "/tmp/out"},
			wantIs:   io.ErrUnexpectedEOF,
		},
		{
			name:    "truncated stream",
			src:     "/tmp/out",
			wantCmd: "main: tar -C /tmp -cf - out",
			run: func(_ context.Context, stdout, _ io.Writer) error {
				_, err := stdout.Write(good[:5000]) // inside out/b/c
				return err
			},
			wantErrs: []string{"unexpected EOF"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &fakeExecer{run: func(ctx context.Context, _ string, _ []string, _ io.Reader, stdout, stderr io.Writer) error {
				return tc.run(ctx, stdout, stderr)
			}}
			dest := filepath.Join(t.TempDir(), "out.tgz")
			err := newClient(ex, nil).CopyFile(context.Background(), "main", tc.src, dest, gzip.BestSpeed)
			if calls := ex.Calls(); len(calls) != 1 || calls[0] != tc.wantCmd {
				t.Errorf("exec calls = %q, want %q", calls, tc.wantCmd)
			}
			if len(tc.wantErrs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				x := t.TempDir()
				f, _ := os.Open(dest)
				defer f.Close()
				if err := archive.Extract(context.Background(), f, x); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(filepath.Join(x, "out/b/c")); len(b) != 300000 {
					t.Errorf("out/b/c has %d bytes, want 300000", len(b))
				}
				return
			}
			if err == nil {
				t.Fatal("CopyFile = nil, want an error")
			}
			for _, w := range tc.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tc.wantIs)
			}
			if _, serr := os.Stat(dest); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("%s left behind after an error", dest)
			}
		})
	}
}

func TestSplitPath(t *testing.T) {
	for in, want := range map[string][2]string{
		"/tmp/out":  {"/tmp", "out"},
		"/tmp/out/": {"/tmp", "out"},
		"/out":      {"/", "out"},
		"/":         {"/", "."},
		"rel":       {".", "rel"},
	} {
		if d, b := splitPath(in); d != want[0] || b != want[1] {
			t.Errorf("splitPath(%q) = %q, %q; want %q", in, d, b, want)
		}
	}
}

func TestKill(t *testing.T) {
	const grace = 100 * time.Millisecond
	noShell := errors.New(`exec: "sh": executable file not found in $PATH`)
	for _, tc := range []struct {
		name    string
		running []string
		kill    []string
		// onExec is what the container does on an exec: returns the exec's error.
		onExec    func(st *fakeStatus, container string, cmd []string) error
		wantCalls []string
		wantErrs  []string
		wantIs    error
		minTime   time.Duration
	}{
		{
			name:      "already terminated: skipped",
			running:   nil,
			kill:      []string{"sidecar"},
			wantCalls: nil,
		},
		{
			name:      "stops on SIGTERM",
			running:   []string{"sidecar", "main"},
			kill:      []string{"sidecar"},
			onExec:    func(st *fakeStatus, c string, _ []string) error { st.stop(c); return nil },
			wantCalls: []string{"sidecar: sh -c kill -s TERM 1"},
		},
		{
			name:    "PID 1 ignores SIGTERM and survives",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec:  func(*fakeStatus, string, []string) error { return nil },
			wantCalls: []string{
				"sidecar: sh -c kill -s TERM 1",
				"sidecar: sh -c kill -s KILL -1 2>/dev/null; true",
			},
			wantErrs: []string{`"sidecar"`, "argo/wf-1", "native sidecar", "docker backend"},
			wantIs:   executor.ErrPID1Survived,
			minTime:  grace + 50*time.Millisecond,
		},
		{
			name:    "PID 1 exits once its children are killed",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec: func(st *fakeStatus, c string, cmd []string) error {
				if strings.Contains(cmd[2], "KILL") {
					go st.stop(c)
				}
				return nil
			},
			wantCalls: []string{
				"sidecar: sh -c kill -s TERM 1",
				"sidecar: sh -c kill -s KILL -1 2>/dev/null; true",
			},
		},
		{
			name:      "no shell",
			running:   []string{"sidecar"},
			kill:      []string{"sidecar"},
			onExec:    func(*fakeStatus, string, []string) error { return noShell },
			wantCalls: []string{"sidecar: sh -c kill -s TERM 1"},
			wantErrs:  []string{`"sidecar"`, "executable file not found", "docker backend", "native sidecar"},
		},
		{
			name:    "exits between status and exec",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec: func(st *fakeStatus, c string, _ []string) error {
				st.stop(c)
				return errors.New("container not running")
			},
			wantCalls: []string{"sidecar: sh -c kill -s TERM 1"},
		},
		{
			name:    "two containers, one survives",
			running: []string{"a", "b"},
			kill:    []string{"a", "b"},
			onExec: func(st *fakeStatus, c string, _ []string) error {
				if c == "a" {
					st.stop(c)
				}
				return nil
			},
			wantCalls: []string{
				"a: sh -c kill -s TERM 1",
				"b: sh -c kill -s TERM 1",
				"b: sh -c kill -s KILL -1 2>/dev/null; true",
			},
			wantErrs: []string{`"b"`},
			wantIs:   executor.ErrPID1Survived,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStatus(tc.running...)
			ex := &fakeExecer{run: func(_ context.Context, c string, cmd []string, _ io.Reader, _, _ io.Writer) error {
				return tc.onExec(st, c, cmd)
			}}
			start := time.Now()
			err := newClient(ex, st).Kill(context.Background(), tc.kill, grace)
			if d := time.Since(start); d < tc.minTime {
				t.Errorf("Kill took %v, want at least %v (grace and settle)", d, tc.minTime)
			}
			if !slices.Equal(ex.Calls(), tc.wantCalls) {
				t.Errorf("exec calls = %q, want %q", ex.Calls(), tc.wantCalls)
			}
			if len(tc.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("Kill = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Kill = nil, want an error")
			}
			for _, w := range tc.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tc.wantIs)
			}
		})
	}
}

func TestKillHonoursContext(t *testing.T) {
	st := newFakeStatus("sidecar")
	ex := &fakeExecer{run: func(context.Context, string, []string, io.Reader, io.Writer, io.Writer) error { return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := newClient(ex, st).Kill(ctx, []string{"sidecar"}, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Kill = %v, want the context's error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Kill took %v after its context ended", d)
	}
}

func TestCheckKillable(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want string
	}{
		{"plain", corev1.PodSpec{}, ""},
		{"shareProcessNamespace", corev1.PodSpec{ShareProcessNamespace: &yes}, "shareProcessNamespace"},
		{"hostPID", corev1.PodSpec{HostPID: true}, "hostPID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckKillable("k8sapi", &tc.spec)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, executor.ErrNotSupported) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckKillable = %v, want ErrNotSupported naming %s", err, tc.want)
			}
		})
	}
}

func TestWaitExit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		result  error
		wantNil bool
	}{
		{"killed with the container", &executor.ExitCodeError{Container: "main", Code: 137}, true},
		{"terminated with the container", &executor.ExitCodeError{Container: "main", Code: 143}, true},
		{"shell ended by itself", nil, false},
		{"shell failed", &executor.ExitCodeError{Container: "main", Code: 1}, false},
		{"no shell", errors.New(`exec: "sh": executable file not found`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &fakeExecer{run: func(_ context.Context, _ string, cmd []string, stdin io.Reader, stdout, _ io.Writer) error {
				if stdin == nil || stdout != nil {
					t.Errorf("WaitExit opened stdin=%v stdout=%v; want stdin only", stdin != nil, stdout != nil)
				}
				return tc.result
			}}
			err := newClient(ex, nil).WaitExit(context.Background(), "main")
			if tc.wantNil != (err == nil) {
				t.Fatalf("WaitExit = %v, want nil: %v", err, tc.wantNil)
			}
			if err != nil && !errors.Is(err, ErrExitNotObserved) {
				t.Errorf("WaitExit = %v, want ErrExitNotObserved", err)
			}
		})
	}
}

// TestWaitExitClosesStdin: when WaitExit's context ends, the remote shell's
// stdin is closed, so it does not linger in the container.
func TestWaitExitClosesStdin(t *testing.T) {
	stdinClosed := make(chan struct{})
	ex := &fakeExecer{run: func(ctx context.Context, _ string, _ []string, stdin io.Reader, _, _ io.Writer) error {
		go func() {
			io.Copy(io.Discard, stdin) // returns at EOF
			close(stdinClosed)
		}()
		<-ctx.Done()
		return ctx.Err()
	}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := newClient(ex, nil).WaitExit(ctx, "main"); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitExit = %v, want context.Canceled", err)
	}
	select {
	case <-stdinClosed:
	case <-time.After(5 * time.Second):
		t.Fatal("WaitExit returned without closing the session's stdin")
	}
}

// The kill session is SIGKILLed (exit 137) when PID 1 exits at once, and the
// status shows the exit only a moment later: that is a stopped container,
// not a failure to signal it.
func TestKillSessionKilledByTheExitItCaused(t *testing.T) {
	st := newFakeStatus("side")
	ex := &fakeExecer{run: func(_ context.Context, c string, cmd []string, _ io.Reader, _, _ io.Writer) error {
		go func() { time.Sleep(20 * time.Millisecond); st.stop(c) }() // status lags
		return &executor.ExitCodeError{Container: c, Command: strings.Join(cmd, " "), Code: 137}
	}}
	if err := newClient(ex, st).Kill(context.Background(), []string{"side"}, time.Second); err != nil {
		t.Fatalf("Kill: %v; the container stopped, the exec's 137 was its own death", err)
	}
}

func TestMissingPathWrapsErrNotExist(t *testing.T) {
	ex := &fakeExecer{run: func(_ context.Context, c string, cmd []string, _ io.Reader, _, stderr io.Writer) error {
		io.WriteString(stderr, "tar: can't change directory to '/nope': No such file or directory\n")
		return &executor.ExitCodeError{Container: c, Command: strings.Join(cmd, " "), Code: 1}
	}}
	c := newClient(ex, newFakeStatus())
	_, err := c.GetFileContents(context.Background(), "main", "/nope/x", 1024)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/nope/x") || !strings.Contains(err.Error(), `"main"`) {
		t.Errorf("GetFileContents: %v; want fs.ErrNotExist naming container and path", err)
	}
	err = c.CopyFile(context.Background(), "main", "/nope/x", filepath.Join(t.TempDir(), "o.tgz"), 1)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CopyFile: %v; want fs.ErrNotExist", err)
	}
	ex.run = func(_ context.Context, c string, cmd []string, _ io.Reader, _, stderr io.Writer) error {
		io.WriteString(stderr, "tar: x: Permission denied\n")
		return &executor.ExitCodeError{Container: c, Command: strings.Join(cmd, " "), Code: 1}
	}
	if _, err := c.GetFileContents(context.Background(), "main", "/x", 1024); errors.Is(err, fs.ErrNotExist) {
		t.Errorf("permission denied reported as missing: %v", err)
	}
}
