package kubelet

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/argoexec/argoexec/executor/internal/podexec"
)

// stepClock is a clock whose timers shorter than 5 s fire at once, recording
// each interval asked for, so that a test drives /pods polling poll by poll
// without sleeping. Longer timers (the engine's deadlines) and, with hold,
// every timer never fire.
type stepClock struct {
	*clocktesting.FakeClock
	never *clocktesting.FakeClock

	mu        sync.Mutex
	intervals []time.Duration
	hold      bool
}

func newStepClock(hold bool) *stepClock {
	return &stepClock{FakeClock: clocktesting.NewFakeClock(time.Unix(0, 0)), never: clocktesting.NewFakeClock(time.Unix(0, 0)), hold: hold}
}

// NewTimer implements clock.Clock.
func (c *stepClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hold || d >= 5*time.Second {
		return c.never.NewTimer(d)
	}
	c.intervals = append(c.intervals, d)
	t := c.FakeClock.NewTimer(d)
	c.FakeClock.Step(d)
	return t
}

func (c *stepClock) setHold(hold bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = hold
}

func (c *stepClock) got() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.intervals)
}

// withClock makes x's engine and poller run on clk.
func withClock(x *Executor, clk clock.Clock) *Executor {
	x.Engine = x.newEngine(clk)
	return x
}

// podSequence answers the n-th /pods poll (from 1) with states(n).
type podSequence struct {
	mu     sync.Mutex
	polls  int
	states func(n int) map[string]corev1.ContainerState
}

func (s *podSequence) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.polls++
	st := s.states(s.polls)
	s.mu.Unlock()
	p := pod(st, "main", "wait")
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].ContainerID = "containerd://" + p.Status.ContainerStatuses[i].Name
	}
	servePods(p)(w, r)
}

func (s *podSequence) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

func ms(ds ...int) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d) * time.Millisecond
	}
	return out
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

// TestWaitPolling: the /pods intervals of a Wait that only the status ends.
func TestWaitPolling(t *testing.T) {
	tests := []struct {
		name      string
		states    func(n int) map[string]corev1.ContainerState
		wantPolls int
		want      []time.Duration
	}{
		{
			name: "backs off to PollMax while nothing changes",
			states: func(n int) map[string]corev1.ContainerState {
				if n < 8 {
					return map[string]corev1.ContainerState{"main": running()}
				}
				return map[string]corev1.ContainerState{"main": terminated(0)}
			},
			wantPolls: 8,
			want:      ms(100, 200, 400, 800, 1000, 1000, 1000),
		},
		{
			name: "starts again from PollInitial when a state changes",
			states: func(n int) map[string]corev1.ContainerState {
				switch {
				case n <= 3:
					return map[string]corev1.ContainerState{"main": waiting("ContainerCreating")}
				case n <= 6:
					return map[string]corev1.ContainerState{"main": running()}
				default:
					return map[string]corev1.ContainerState{"main": terminated(1)}
				}
			},
			wantPolls: 7,
			want:      ms(100, 200, 400, 100, 200, 400),
		},
		{
			name: "already terminated returns at the first poll",
			states: func(int) map[string]corev1.ContainerState {
				return map[string]corev1.ContainerState{"main": terminated(0)}
			},
			wantPolls: 1,
			want:      nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			env.cfg.NoExecWait = true
			seq := &podSequence{states: tt.states}
			env.f.setPods(seq.serve)
			clk := newStepClock(false)
			x := withClock(env.executor(t), clk)
			if err := x.Wait(ctxT(t), []string{"main"}); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if seq.count() != tt.wantPolls {
				t.Errorf("polled /pods %d times, want %d", seq.count(), tt.wantPolls)
			}
			if got := clk.got(); !slices.Equal(got, tt.want) {
				t.Errorf("poll intervals = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUrgentFollowPollsFast: while a kill's grace runs or an exit exec saw
// is confirmed, the interval stops at 200 ms.
func TestUrgentFollowPollsFast(t *testing.T) {
	env := newEnv(t)
	seq := &podSequence{states: func(int) map[string]corev1.ContainerState { return map[string]corev1.ContainerState{"main": running()} }}
	env.f.setPods(seq.serve)
	clk := newStepClock(false)
	x := withClock(env.executor(t), clk)
	src := &podPoller{e: x, clock: clk}
	from, err := src.Get(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	errStop := errors.New("stop")
	n := 0
	err = src.Follow(ctxT(t), from, podexec.FollowOptions{Urgent: true}, func(*corev1.Pod) error {
		if n++; n == 5 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Follow = %v", err)
	}
	if got, want := clk.got(), ms(100, 200, 200, 200, 200); !slices.Equal(got, want) {
		t.Errorf("urgent poll intervals = %v, want %v", got, want)
	}
}

// TestWaitFastPath: the exec session into main is killed while /pods still
// shows it running; Wait returns without polling again, and GetExitCode
// polls urgently until the status shows the exit.
func TestWaitFastPath(t *testing.T) {
	fe := &fakeExec{dies: make(chan struct{})}
	env, _ := execEnv(t, fe)
	// The kubelet's status lags: main shows terminated only from poll 4.
	seq := &podSequence{states: func(n int) map[string]corev1.ContainerState {
		if n < 4 {
			return map[string]corev1.ContainerState{"main": running()}
		}
		return map[string]corev1.ContainerState{"main": terminated(42)}
	}}
	env.f.setPods(seq.serve)
	clk := newStepClock(true) // polling never advances: only the exec session can end Wait
	x := withClock(env.executor(t), clk)
	close(fe.dies) // main's PID 1 exits: the session's shell is killed (137)
	if err := x.Wait(ctxT(t), []string{"main"}); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if seq.count() != 1 {
		t.Errorf("Wait polled /pods %d times; the exec session should end it after the first", seq.count())
	}
	if byExec, byStatus := x.WaitPaths(); byExec != 1 || byStatus != 0 {
		t.Errorf("WaitPaths = %d, %d; want the exec fast path", byExec, byStatus)
	}
	clk.setHold(false)
	code, err := x.GetExitCode(ctxT(t), "main")
	if err != nil || code != 42 {
		t.Fatalf("GetExitCode = %d, %v; want 42", code, err)
	}
	if got, want := clk.got(), ms(100, 200); !slices.Equal(got, want) {
		t.Errorf("GetExitCode poll intervals = %v, want %v", got, want)
	}
}

func TestWaitEnds(t *testing.T) {
	runningMain := map[string]corev1.ContainerState{"main": running()}
	tests := []struct {
		name      string
		handler   func(polls int) (code int, body string) // code 0: serve the running pod
		cancelAt  int
		wantPolls int
		want      []string
		wantIs    error
	}{
		{name: "ctx cancelled", cancelAt: 2, wantPolls: 2, wantIs: context.Canceled, want: []string{"[main]", testNS + "/" + testPod}},
		{name: "403 is final", handler: func(int) (int, string) { return 403, "Forbidden" },
			wantPolls: 1, want: []string{"403", "nodes/proxy", `"get"`}},
		{name: "401 is final", handler: func(int) (int, string) { return 401, "Unauthorized" },
			wantPolls: 1, want: []string{"401", "token"}},
		{name: "5xx is retried, within a bound", handler: func(int) (int, string) { return 500, "kubelet trouble" },
			wantPolls: maxPollFailures, want: []string{"500", "kubelet trouble"}},
		{name: "a passing 5xx is retried", handler: func(n int) (int, string) {
			if n == 1 {
				return 503, "busy"
			}
			return 0, ""
		}, cancelAt: 3, wantPolls: 3, wantIs: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			env.cfg.NoExecWait = true
			ctx, cancel := context.WithCancel(ctxT(t))
			defer cancel()
			var mu sync.Mutex
			polls := 0
			env.f.setPods(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				polls++
				n := polls
				mu.Unlock()
				if n == tt.cancelAt {
					defer cancel()
				}
				if tt.handler != nil {
					if code, body := tt.handler(n); code != 0 {
						serveStatus(code, body)(w, r)
						return
					}
				}
				servePods(pod(runningMain, "main"))(w, r)
			})
			x := withClock(env.executor(t), newStepClock(false))
			err := x.Wait(ctx, []string{"main"})
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Wait = %v, want an error wrapping %v", err, tt.wantIs)
			}
			wantContains(t, err, tt.want...)
			mu.Lock()
			defer mu.Unlock()
			if polls != tt.wantPolls {
				t.Errorf("polled /pods %d times, want %d", polls, tt.wantPolls)
			}
		})
	}
}

func TestWaitKubeletRestarted(t *testing.T) {
	// A restarted kubelet lists no pods until it has synced: Wait rides it out.
	env := newEnv(t)
	seq := &podSequence{states: func(int) map[string]corev1.ContainerState {
		return map[string]corev1.ContainerState{"main": terminated(0)}
	}}
	var mu sync.Mutex
	polls := 0
	env.f.setPods(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		polls++
		n := polls
		mu.Unlock()
		if n <= 3 {
			servePods()(w, r)
			return
		}
		seq.serve(w, r)
	})
	x := withClock(env.executor(t), newStepClock(false))
	if err := x.Wait(ctxT(t), []string{"main"}); err != nil {
		t.Fatalf("Wait: %v", err)
	}

	// A pod that never shows up is an error, within the bound.
	env.f.setPods(servePods(otherPod(testNS, "other")))
	err := x.Wait(ctxT(t), []string{"main"})
	if !errors.Is(err, ErrPodNotFound) {
		t.Errorf("Wait = %v, want an error wrapping ErrPodNotFound", err)
	}
}

func TestWaitKubeletDown(t *testing.T) {
	env := newEnv(t)
	clk := newStepClock(false)
	x := withClock(env.executor(t), clk)
	env.f.srv.Close() // a kubelet restarting: connections refused
	err := x.Wait(ctxT(t), []string{"main"})
	wantContains(t, err, "list pods on "+env.cfg.addr(), "connection refused")
	got := clk.got()
	if len(got) != maxPollFailures-1 || got[len(got)-1] != DefaultPollMax {
		t.Errorf("retried with intervals %v; want %d polls backing off to %v", got, maxPollFailures, DefaultPollMax)
	}
}

// TestWaitStalledPollIsBounded: a /pods read that gets no answer (a stalled
// connection, as the testbed's pod network once did for 10-80 s) is cut at
// PollTimeout on the poller's clock and retried, so Wait ends with the next
// read that shows main terminated instead of hanging on the first.
func TestWaitStalledPollIsBounded(t *testing.T) {
	env := newEnv(t)
	env.cfg.NoExecWait = true
	stalled := make(chan struct{})
	var mu sync.Mutex
	polls := 0
	env.f.setPods(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		polls++
		n := polls
		mu.Unlock()
		switch n {
		case 1: // Wait's first read: main runs
			servePods(pod(map[string]corev1.ContainerState{"main": running()}, "main"))(w, r)
		case 2: // the kubelet never answers this one
			close(stalled)
			<-r.Context().Done()
		default:
			servePods(pod(map[string]corev1.ContainerState{"main": terminated(0)}, "main"))(w, r)
		}
	})
	clk := newStepClock(false)
	x := withClock(env.executor(t), clk)
	done := make(chan error, 1)
	go func() { done <- x.Wait(ctxT(t), []string{"main"}) }()
	<-stalled
	// The read's timer is the only one of PollTimeout on the clock that
	// never fires by itself: step it.
	for start := time.Now(); !clk.never.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("no timer is pending on the stalled /pods read: nothing bounds it")
		}
	}
	clk.never.Step(DefaultPollTimeout)
	if err := <-done; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if polls != 3 {
		t.Errorf("polled /pods %d times, want 3: the stalled read cut and retried once", polls)
	}
}
