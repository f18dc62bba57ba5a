package podexec

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
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/pkg/archive"
)

// newClient is an engine for the file tests, with a GetFileContents limit
// of 10 bytes.
func newClient(ex Execer) *Engine {
	e, _ := newTestEngine(ex, newFakePod())
	e.maxFileBytes = 10
	return e
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
			got, err := newClient(ex).GetFileContents(context.Background(), "main", "/tmp/out")
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
			wantErrs: []string{"end-of-archive marker", "/tmp/out", "ended without an error after 1024 bytes"},
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
			wantErrs: []string{"unexpected EOF", "ended without an error after 5000 bytes", "closed before the end"},
			wantIs:   io.ErrUnexpectedEOF,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &fakeExecer{run: func(ctx context.Context, _ string, _ []string, _ io.Reader, stdout, stderr io.Writer) error {
				return tc.run(ctx, stdout, stderr)
			}}
			dest := filepath.Join(t.TempDir(), "out.tgz")
			err := newClient(ex).CopyFile(context.Background(), "main", tc.src, dest, gzip.BestSpeed)
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
	isKill := func(cmd []string) bool { return strings.Contains(cmd[2], "KILL") }
	for _, tc := range []struct {
		name    string
		running []string
		kill    []string
		// onExec is what a kill command does in the container: returns the exec's error.
		onExec    func(p *fakePod, container string, cmd []string) error
		wantCalls []string // kill commands, waitExit sessions left out
		wantErrs  []string
		wantIs    error
		wantNot   error         // an error the result must not wrap
		minTime   time.Duration // on the fake clock
		// clock: Kill must wait out grace (and settle) on the clock, which
		// the test then steps; without, Kill must not need it.
		clock bool
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
			onExec:    func(p *fakePod, c string, _ []string) error { p.stop(c, 143); return nil },
			wantCalls: []string{"sidecar: sh -c kill -s TERM 1"},
		},
		{
			name:      "stops on SIGTERM, seen by exec before the status",
			running:   []string{"sidecar"},
			kill:      []string{"sidecar"},
			onExec:    func(p *fakePod, c string, _ []string) error { p.die(c); return nil },
			wantCalls: []string{"sidecar: sh -c kill -s TERM 1"},
		},
		{
			name:    "PID 1 ignores SIGTERM and survives",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec:  func(*fakePod, string, []string) error { return nil },
			wantCalls: []string{
				"sidecar: sh -c kill -s TERM 1",
				"sidecar: sh -c kill -KILL -1",
			},
			wantErrs: []string{`"sidecar"`, "argo/wf-1", "native sidecar", "docker backend"},
			wantIs:   executor.ErrPID1Survived,
			minTime:  grace + 50*time.Millisecond,
			clock:    true,
		},
		{
			name:    "PID 1 exits once its children are killed",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec: func(p *fakePod, c string, cmd []string) error {
				if isKill(cmd) {
					p.stop(c, 137)
				}
				return nil
			},
			wantCalls: []string{
				"sidecar: sh -c kill -s TERM 1",
				"sidecar: sh -c kill -KILL -1",
			},
			clock: true,
		},
		{
			// dash before the fix: the kill builtin refuses its arguments.
			// That is argoexec's fault, and the error must say so and show
			// the shell's message, not blame PID 1.
			name:    "the kill command itself fails",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec: func(p *fakePod, c string, cmd []string) error {
				if isKill(cmd) {
					return &executor.ExitCodeError{Container: c, Command: strings.Join(cmd, " "), Code: 2, Stderr: "sh: 1: kill: Illegal option -1"}
				}
				return nil
			},
			wantCalls: []string{
				"sidecar: sh -c kill -s TERM 1",
				"sidecar: sh -c kill -KILL -1",
			},
			wantErrs: []string{`"sidecar"`, "Illegal option -1", "exited with code 2", "fault of argoexec's kill command"},
			wantNot:  executor.ErrPID1Survived,
			clock:    true,
		},
		{
			// Only PID 1 and the kill shell left: the builtin fails with
			// ESRCH, which is not a failure to signal; PID 1 then survives.
			name:    "nothing but PID 1 left to kill",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec: func(p *fakePod, c string, cmd []string) error {
				if isKill(cmd) {
					return &executor.ExitCodeError{Container: c, Command: strings.Join(cmd, " "), Code: 1, Stderr: "sh: 1: kill: No such process"}
				}
				return nil
			},
			wantCalls: []string{
				"sidecar: sh -c kill -s TERM 1",
				"sidecar: sh -c kill -KILL -1",
			},
			wantErrs: []string{`"sidecar"`, "PID 1"},
			wantIs:   executor.ErrPID1Survived,
			clock:    true,
		},
		{
			name:      "no shell",
			running:   []string{"sidecar"},
			kill:      []string{"sidecar"},
			onExec:    func(*fakePod, string, []string) error { return noShell },
			wantCalls: []string{"sidecar: sh -c kill -s TERM 1"},
			wantErrs:  []string{`"sidecar"`, "executable file not found", "docker backend", "native sidecar"},
			clock:     true,
		},
		{
			name:    "exits between status and exec",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec: func(p *fakePod, c string, _ []string) error {
				p.stop(c, 0)
				return errors.New("container not running")
			},
			wantCalls: []string{"sidecar: sh -c kill -s TERM 1"},
		},
		{
			// The kill session is SIGKILLed (exit 137) when PID 1 exits at
			// once, and the status shows the exit only later: that is a
			// stopped container, not a failure to signal it.
			name:    "kill session killed by the exit it caused",
			running: []string{"sidecar"},
			kill:    []string{"sidecar"},
			onExec: func(p *fakePod, c string, cmd []string) error {
				p.die(c)
				return &executor.ExitCodeError{Container: c, Command: strings.Join(cmd, " "), Code: 137}
			},
			wantCalls: []string{"sidecar: sh -c kill -s TERM 1"},
		},
		{
			name:    "two containers, one survives",
			running: []string{"main", "sidecar"},
			kill:    []string{"main", "sidecar"},
			onExec: func(p *fakePod, c string, _ []string) error {
				if c == "main" {
					p.stop(c, 143)
				}
				return nil
			},
			wantCalls: []string{
				"main: sh -c kill -s TERM 1",
				"sidecar: sh -c kill -s TERM 1",
				"sidecar: sh -c kill -KILL -1",
			},
			wantErrs: []string{`"sidecar"`},
			wantIs:   executor.ErrPID1Survived,
			clock:    true,
		},
		{
			name:     "unknown container",
			running:  []string{"main"},
			kill:     []string{"nope"},
			wantErrs: []string{"no container nope", "kill containers [nope]"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakePod(tc.running...)
			ex := p.execer(func(c string, cmd []string) error { return tc.onExec(p, c, cmd) })
			e, fc := newTestEngine(ex, p)
			stop := func() {}
			if tc.clock {
				stop = drive(t, fc, 10*time.Millisecond)
			}
			start := fc.Now()
			err := e.Kill(context.Background(), tc.kill, grace)
			stop()
			if d := fc.Since(start); d < tc.minTime {
				t.Errorf("Kill took %v on the clock, want at least %v (grace and settle)", d, tc.minTime)
			}
			if n := ex.active.Load(); n != 0 {
				t.Errorf("%d exec sessions still open after Kill returned", n)
			}
			var calls []string
			for _, c := range ex.Calls() {
				if !strings.HasSuffix(c, strings.Join(waitExitCmd, " ")) {
					calls = append(calls, c)
				}
			}
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("kill calls = %q, want %q", calls, tc.wantCalls)
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
			if tc.wantNot != nil && errors.Is(err, tc.wantNot) {
				t.Errorf("error %q wraps %v; it must not", err, tc.wantNot)
			}
		})
	}
}

// TestKillRefusesSharedPIDNamespace: where PID 1 is not the container's
// process, Kill refuses before it signals anything.
func TestKillRefusesSharedPIDNamespace(t *testing.T) {
	for name, set := range map[string]func(*corev1.PodSpec){
		"shareProcessNamespace": func(s *corev1.PodSpec) { s.ShareProcessNamespace = new(true) },
		"hostPID":               func(s *corev1.PodSpec) { s.HostPID = true },
	} {
		t.Run(name, func(t *testing.T) {
			p := newFakePod("main")
			p.update(func(pod *corev1.Pod) { set(&pod.Spec) })
			ex := p.execer(nil)
			e, _ := newTestEngine(ex, p)
			if err := e.Kill(context.Background(), []string{"main"}, time.Second); !errors.Is(err, executor.ErrNotSupported) {
				t.Errorf("Kill = %v, want ErrNotSupported", err)
			}
			if calls := ex.Calls(); len(calls) != 0 {
				t.Errorf("exec calls = %q, want none", calls)
			}
		})
	}
}

func TestKillHonoursContext(t *testing.T) {
	p := newFakePod("sidecar")
	e, _ := newTestEngine(p.execer(nil), p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once Kill is following the status in its grace period.
		for {
			p.mu.Lock()
			n := len(p.follows)
			p.mu.Unlock()
			if n > 0 {
				cancel()
				return
			}
			runtime.Gosched()
		}
	}()
	err := e.Kill(ctx, []string{"sidecar"}, time.Hour)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Kill = %v, want the context's error", err)
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
		{"kubelet: not among the running containers", errors.New(`unable to upgrade connection: container not found ("main")`), true},
		{"containerd: exited", errors.New(`failed to exec in container: container is in CONTAINER_EXITED state`), true},
		{"containerd: died between", errors.New(`OCI runtime exec failed: cannot exec in a stopped state: unknown`), true},
		{"containerd: task gone", errors.New(`Internal error occurred: error executing command in container: failed to exec in container: failed to load task: no running task found: task 5c19 not found: not found`), true},
		{"API server: pod completed", errors.New(`cannot exec into a container in a completed pod; current phase is Succeeded`), true},
		{"other 500", errors.New(`unable to upgrade connection: error dialing backend`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &fakeExecer{run: func(_ context.Context, _ string, cmd []string, stdin io.Reader, stdout, _ io.Writer) error {
				if stdin == nil || stdout != nil {
					t.Errorf("waitExit opened stdin=%v stdout=%v; want stdin only", stdin != nil, stdout != nil)
				}
				return tc.result
			}}
			err := newClient(ex).waitExit(context.Background(), "main")
			if tc.wantNil != (err == nil) {
				t.Fatalf("waitExit = %v, want nil: %v", err, tc.wantNil)
			}
			if err != nil && !errors.Is(err, ErrExitNotObserved) {
				t.Errorf("waitExit = %v, want ErrExitNotObserved", err)
			}
		})
	}
}

// TestWaitExitClosesStdin: when waitExit's context ends, the remote shell's
// stdin is closed, so it does not linger in the container.
func TestWaitExitClosesStdin(t *testing.T) {
	stdinClosed := make(chan struct{})
	started := make(chan struct{})
	ex := &fakeExecer{run: func(ctx context.Context, _ string, _ []string, stdin io.Reader, _, _ io.Writer) error {
		go func() {
			io.Copy(io.Discard, stdin) // returns at EOF
			close(stdinClosed)
		}()
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if err := newClient(ex).waitExit(ctx, "main"); !errors.Is(err, context.Canceled) {
		t.Errorf("waitExit = %v, want context.Canceled", err)
	}
	<-stdinClosed // the test times out if waitExit left the session's stdin open
}

func TestMissingPathWrapsErrNotExist(t *testing.T) {
	ex := &fakeExecer{run: func(_ context.Context, c string, cmd []string, _ io.Reader, _, stderr io.Writer) error {
		io.WriteString(stderr, "tar: can't change directory to '/nope': No such file or directory\n")
		return &executor.ExitCodeError{Container: c, Command: strings.Join(cmd, " "), Code: 1}
	}}
	c := newClient(ex)
	_, err := c.GetFileContents(context.Background(), "main", "/nope/x")
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
	if _, err := c.GetFileContents(context.Background(), "main", "/x"); errors.Is(err, fs.ErrNotExist) {
		t.Errorf("permission denied reported as missing: %v", err)
	}
}
