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
)

// fakeClock stands in for time.After: it records every interval asked for
// and fires at once, so a test drives Wait's polling poll by poll without
// sleeping. Intervals of statusLag or more never fire (they are deadlines).
type fakeClock struct {
	mu        sync.Mutex
	intervals []time.Duration
	// hold makes poll intervals never fire either.
	hold bool
}

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d >= statusLag || c.hold {
		return nil
	}
	c.intervals = append(c.intervals, d)
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

func (c *fakeClock) got() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.intervals)
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
	servePods(pod(st, "main", "wait"))(w, r)
}

func (s *podSequence) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

// blockUntilDone is an exec watch that never sees an exit.
func blockUntilDone(ctx context.Context, _ string) error {
	<-ctx.Done()
	return ctx.Err()
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

func TestWaitPolling(t *testing.T) {
	tests := []struct {
		name      string
		states    func(n int) map[string]corev1.ContainerState
		watch     func(context.Context, string) error
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
			watch:     blockUntilDone,
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
			watch:     blockUntilDone,
			wantPolls: 7,
			want:      ms(100, 200, 400, 100, 200, 400),
		},
		{
			name: "exec watch that cannot run leaves polling alone",
			states: func(n int) map[string]corev1.ContainerState {
				if n < 4 {
					return map[string]corev1.ContainerState{"main": running()}
				}
				return map[string]corev1.ContainerState{"main": terminated(0)}
			},
			watch: func(context.Context, string) error {
				return errors.New("exec: no shell in the image")
			},
			wantPolls: 4,
			want:      ms(100, 200, 400),
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
			seq := &podSequence{states: tt.states}
			env.f.setPods(seq.serve)
			x := env.executor(t)
			clock := &fakeClock{}
			x.after, x.watchExit = clock.after, tt.watch
			if err := x.Wait(ctxT(t), []string{"main"}); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if seq.count() != tt.wantPolls {
				t.Errorf("polled /pods %d times, want %d", seq.count(), tt.wantPolls)
			}
			if got := clock.got(); !slices.Equal(got, tt.want) {
				t.Errorf("poll intervals = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWaitFastPath(t *testing.T) {
	env := newEnv(t)
	// The kubelet's status lags: main shows terminated only from poll 4.
	seq := &podSequence{states: func(n int) map[string]corev1.ContainerState {
		if n < 4 {
			return map[string]corev1.ContainerState{"main": running()}
		}
		return map[string]corev1.ContainerState{"main": terminated(42)}
	}}
	env.f.setPods(seq.serve)
	x := env.executor(t)
	clock := &fakeClock{hold: true} // polling never advances: only the exec watch can end Wait
	exited := make(chan struct{})
	x.after = clock.after
	x.watchExit = func(ctx context.Context, container string) error {
		if container != "main" {
			t.Errorf("exec watch on %q", container)
		}
		select {
		case <-exited:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	close(exited)
	if err := x.Wait(ctxT(t), []string{"main"}); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if seq.count() != 1 {
		t.Errorf("Wait polled /pods %d times; the exec watch should end it after the first", seq.count())
	}

	// GetExitCode confirms with the kubelet's status, polling until it shows the exit.
	clock.mu.Lock()
	clock.hold = false
	clock.mu.Unlock()
	code, err := x.GetExitCode(ctxT(t), "main")
	if err != nil || code != 42 {
		t.Fatalf("GetExitCode = %d, %v; want 42", code, err)
	}
	if got, want := clock.got(), ms(100, 100); !slices.Equal(got, want) {
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
			x := env.executor(t)
			x.after, x.watchExit = (&fakeClock{}).after, blockUntilDone
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
	x := env.executor(t)
	x.after = (&fakeClock{}).after
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

func TestWaitUnknownContainer(t *testing.T) {
	env := newEnv(t)
	env.f.setPods(servePods(pod(nil, "main")))
	x := env.executor(t)
	err := x.Wait(ctxT(t), []string{"main", "nosuch"})
	wantContains(t, err, `no container "nosuch"`, "init main")
	if err := x.Wait(ctxT(t), nil); err != nil {
		t.Errorf("Wait on no containers: %v", err)
	}
}

func TestWaitKubeletDown(t *testing.T) {
	env := newEnv(t)
	x := env.executor(t)
	env.f.srv.Close() // a kubelet restarting: connections refused
	clock := &fakeClock{}
	x.after = clock.after
	err := x.Wait(ctxT(t), []string{"main"})
	wantContains(t, err, "list pods on "+env.cfg.addr(), "connection refused")
	got := clock.got()
	if len(got) != maxPollFailures-1 || got[len(got)-1] != DefaultPollMax {
		t.Errorf("retried with intervals %v; want %d polls backing off to %v", got, maxPollFailures, DefaultPollMax)
	}
}
