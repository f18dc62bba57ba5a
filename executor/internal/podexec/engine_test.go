package podexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
)

// waitAsync runs Wait in the background.
func waitAsync(e *Engine, names ...string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.Wait(context.Background(), names) }()
	return done
}

// TestWait covers how Wait ends: on the status, on the exec fast path, or
// with an error, and that it never leaves an exec session open.
func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running []string
		setup   func(p *fakePod)
		names   []string
		noExec  bool
		// act changes the pod once Wait is following it.
		act        func(p *fakePod)
		execResult error // nil: waitExit sessions end with the container
		wantExec   int   // Waits ended by exec (0 or 1)
		wantErrs   []string
		wantIs     error
		wantNoExec bool // no exec session at all
	}{
		{
			name:       "already terminated",
			setup:      func(p *fakePod) { p.stop("main", 0) },
			names:      []string{"main"},
			wantNoExec: true,
		},
		{
			name:     "exec sees the exit before the status",
			running:  []string{"main"},
			names:    []string{"main"},
			act:      func(p *fakePod) { p.die("main") },
			wantExec: 1,
		},
		{
			// A main of a few milliseconds has exited before the session
			// reaches it: the refusal is the news, not a reason to wait
			// 0.7-0.9 s for the status.
			name:       "exec refused: the container is no longer running",
			running:    []string{"main"},
			names:      []string{"main"},
			execResult: fmt.Errorf("SPDY: %w", errors.New(`unable to upgrade connection: container not found ("main")`)),
			wantExec:   1,
		},
		{
			name:       "exec refused otherwise: not trusted",
			running:    []string{"main"},
			names:      []string{"main"},
			execResult: errors.New("unable to upgrade connection: error dialing backend"),
			act:        func(p *fakePod) { p.report("main", 0) },
		},
		{
			name:    "status shows the exit",
			running: []string{"main"},
			names:   []string{"main"},
			act:     func(p *fakePod) { p.report("main", 3) },
		},
		{
			name:       "exec session ended by itself: not trusted",
			running:    []string{"main"},
			names:      []string{"main"},
			execResult: &executor.ExitCodeError{Container: "main", Code: 1},
			act:        func(p *fakePod) { p.report("main", 0) },
		},
		{
			name:       "NoExecWait",
			running:    []string{"main"},
			names:      []string{"main"},
			noExec:     true,
			act:        func(p *fakePod) { p.stop("main", 0) },
			wantNoExec: true,
		},
		{
			name:       "fast path skipped with a shared PID namespace",
			running:    []string{"main"},
			setup:      func(p *fakePod) { p.update(func(pod *corev1.Pod) { pod.Spec.ShareProcessNamespace = new(true) }) },
			names:      []string{"main"},
			act:        func(p *fakePod) { p.stop("main", 0) },
			wantNoExec: true,
		},
		{
			name:     "two containers, both by exec",
			running:  []string{"main", "sidecar"},
			names:    []string{"main", "sidecar"},
			act:      func(p *fakePod) { p.die("sidecar"); p.die("main") },
			wantExec: 1,
		},
		{
			name:       "unknown container",
			running:    []string{"main"},
			names:      []string{"main", "nope"},
			wantErrs:   []string{"k8sapi", "argo/wf-1", "has no container nope", "[init sidecar main wait]"},
			wantNoExec: true,
		},
		{
			name:    "pod finished without the container",
			running: []string{"wait"},
			names:   []string{"main"},
			act: func(p *fakePod) {
				p.update(func(pod *corev1.Pod) { pod.Status.Phase = corev1.PodFailed })
			},
			wantErrs:   []string{"pod is Failed", `container "main" never terminated (no status yet)`},
			wantNoExec: true,
		},
		{
			name:     "source fails",
			running:  []string{"main"},
			setup:    func(p *fakePod) { p.getErr = ErrPodGone },
			names:    []string{"main"},
			wantErrs: []string{"wait for containers [main]"},
			wantIs:   ErrPodGone,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakePod(tc.running...)
			if tc.setup != nil {
				tc.setup(p)
			}
			ex := p.execer(nil)
			if tc.execResult != nil {
				ex.run = func(context.Context, string, []string, io.Reader, io.Writer, io.Writer) error { return tc.execResult }
			}
			e, _ := newTestEngine(ex, p)
			e.cfg.NoExecWait = tc.noExec
			done := waitAsync(e, tc.names...)
			if tc.act != nil {
				waitFollowing(p, 1)
				tc.act(p)
			}
			err := <-done
			if n := ex.active.Load(); n != 0 {
				t.Errorf("%d exec sessions still open after Wait returned", n)
			}
			if tc.wantNoExec && len(ex.Calls()) != 0 {
				t.Errorf("exec calls = %q, want none", ex.Calls())
			}
			if len(tc.wantErrs) == 0 && tc.wantIs == nil {
				if err != nil {
					t.Fatalf("Wait = %v", err)
				}
				if x, s := e.WaitPaths(); x != tc.wantExec || x+s != 1 {
					t.Errorf("WaitPaths = %d by exec, %d by status; want %d by exec of 1", x, s, tc.wantExec)
				}
				return
			}
			if err == nil {
				t.Fatal("Wait = nil, want an error")
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

// waitFollowing returns once n Follows of p have started.
func waitFollowing(p *fakePod, n int) {
	for {
		p.mu.Lock()
		got := len(p.follows)
		p.mu.Unlock()
		if got >= n {
			return
		}
		runtime.Gosched()
	}
}

// TestWaitHonoursContext: Wait ends with its context, and has closed the
// exec sessions of its fast path when it returns.
func TestWaitHonoursContext(t *testing.T) {
	p := newFakePod("main")
	ex := p.execer(nil)
	e, _ := newTestEngine(ex, p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Wait(ctx, []string{"main"}) }()
	waitFollowing(p, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want context.Canceled", err)
	}
	if n := ex.active.Load(); n != 0 {
		t.Errorf("%d exec sessions still open after Wait returned", n)
	}
}

func TestGetExitCode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		running   []string
		setup     func(p *fakePod, e *Engine)
		container string
		// act changes the pod once GetExitCode follows it (confirming an exit).
		act      func(p *fakePod)
		drive    bool // step the clock: the confirmation times out
		want     int
		wantErrs []string
	}{
		{
			name:      "terminated",
			setup:     func(p *fakePod, _ *Engine) { p.report("main", 3) },
			container: "main",
			want:      3,
		},
		{
			name:      "running",
			running:   []string{"main"},
			container: "main",
			wantErrs:  []string{"k8sapi", `container "main"`, "argo/wf-1", "has not terminated (running since"},
		},
		{
			name:      "no status yet",
			container: "main",
			wantErrs:  []string{"has not terminated (no status yet)"},
		},
		{
			name:      "unknown container",
			container: "nope",
			wantErrs:  []string{"has no container nope", "[init sidecar main wait]"},
		},
		{
			name:      "exit seen by exec, confirmed by the status",
			running:   []string{"main"},
			setup:     func(p *fakePod, e *Engine) { p.die("main"); e.markExit("main", "main-1") },
			container: "main",
			act:       func(p *fakePod) { p.report("main", 7) },
			want:      7,
		},
		{
			name:      "exit seen by exec, never confirmed",
			running:   []string{"main"},
			setup:     func(p *fakePod, e *Engine) { p.die("main"); e.markExit("main", "main-1") },
			container: "main",
			drive:     true,
			wantErrs:  []string{"processes died but after 10s the status still shows it running"},
		},
		{
			name:    "restarted since exec saw it exit",
			running: []string{"sidecar"},
			setup: func(p *fakePod, e *Engine) {
				e.markExit("sidecar", "sidecar-1")
				p.update(func(pod *corev1.Pod) {
					st := &pod.Status.InitContainerStatuses[1]
					st.LastTerminationState = terminatedState(2, "sidecar-1")
					st.ContainerID = "sidecar-2"
				})
			},
			container: "sidecar",
			want:      2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakePod(tc.running...)
			e, fc := newTestEngine(p.execer(nil), p)
			if tc.setup != nil {
				tc.setup(p, e)
			}
			if tc.drive {
				defer drive(t, fc, time.Second)()
			}
			type result struct {
				code int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				code, err := e.GetExitCode(context.Background(), tc.container)
				done <- result{code, err}
			}()
			if tc.act != nil {
				waitFollowing(p, 1)
				tc.act(p)
			}
			r := <-done
			if len(tc.wantErrs) == 0 {
				if r.err != nil || r.code != tc.want {
					t.Fatalf("GetExitCode = %d, %v; want %d", r.code, r.err, tc.want)
				}
				return
			}
			if r.err == nil {
				t.Fatalf("GetExitCode = %d, nil; want an error", r.code)
			}
			for _, w := range tc.wantErrs {
				if !strings.Contains(r.err.Error(), w) {
					t.Errorf("error %q does not contain %q", r.err, w)
				}
			}
		})
	}
}

// TestWaitThenGetExitCode: the exit exec saw is confirmed by the status
// before GetExitCode answers, and the confirmation follows urgently.
func TestWaitThenGetExitCode(t *testing.T) {
	p := newFakePod("main")
	e, _ := newTestEngine(p.execer(nil), p)
	done := waitAsync(e, "main")
	waitFollowing(p, 1)
	p.die("main")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	code := make(chan int, 1)
	go func() {
		c, err := e.GetExitCode(context.Background(), "main")
		if err != nil {
			t.Error(err)
		}
		code <- c
	}()
	waitFollowing(p, 2)
	p.report("main", 42)
	if c := <-code; c != 42 {
		t.Errorf("GetExitCode = %d, want 42", c)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Equal(p.follows, []FollowOptions{{}, {Urgent: true}}) {
		t.Errorf("follows = %+v; want Wait's, then an urgent one to confirm", p.follows)
	}
}

func TestListContainerNames(t *testing.T) {
	p := newFakePod()
	e, _ := newTestEngine(p.execer(nil), p)
	got, err := e.ListContainerNames(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"init", "sidecar", "main", "wait"}; !slices.Equal(got, want) {
		t.Errorf("ListContainerNames = %v, want %v (init containers first)", got, want)
	}
	p.getErr = errors.New("boom")
	if _, err := e.ListContainerNames(context.Background()); err == nil || !strings.Contains(err.Error(), "k8sapi: list containers of pod argo/wf-1: boom") {
		t.Errorf("ListContainerNames = %v", err)
	}
}

// TestKillIsRestartAware: an instance whose exit exec saw is not signalled
// again, but the instance that replaced it (a restarted native sidecar, a
// new container ID) is.
func TestKillIsRestartAware(t *testing.T) {
	for _, tc := range []struct {
		name      string
		restarted bool
		wantCalls []string
	}{
		{name: "same instance", wantCalls: nil},
		{name: "restarted since", restarted: true, wantCalls: []string{"sidecar: sh -c kill -s TERM 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakePod("sidecar")
			ex := p.execer(func(c string, _ []string) error { p.stop(c, 143); return nil })
			e, _ := newTestEngine(ex, p)
			e.markExit("sidecar", "sidecar-1")
			if tc.restarted {
				p.update(func(pod *corev1.Pod) { pod.Status.InitContainerStatuses[1].ContainerID = "sidecar-2" })
			}
			if err := e.Kill(context.Background(), []string{"sidecar"}, time.Second); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if got := ex.Calls(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("exec calls = %q, want %q", got, tc.wantCalls)
			}
		})
	}
}
