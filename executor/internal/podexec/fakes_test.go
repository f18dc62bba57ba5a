package podexec

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/argoexec/argoexec/executor"
)

// fakeExecer is a hand-written Execer: run decides what each exec does, and
// every call is recorded. active counts the sessions still open.
type fakeExecer struct {
	run func(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error

	mu     sync.Mutex
	calls  []string // "container: cmd..."
	active atomic.Int32
}

func (f *fakeExecer) Exec(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f.mu.Lock()
	f.calls = append(f.calls, container+": "+strings.Join(cmd, " "))
	f.mu.Unlock()
	f.active.Add(1)
	defer f.active.Add(-1)
	return f.run(ctx, container, cmd, stdin, stdout, stderr)
}

func (f *fakeExecer) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// fakePod is a pod whose containers have processes (alive or not) and a
// status that lags behind them as the test decides. It is the PodSource, and
// the Execer's waitExit sessions end (137) when their container's process dies.
type fakePod struct {
	mu      sync.Mutex
	pod     *corev1.Pod
	alive   map[string]bool
	changed chan struct{} // closed and replaced on every change
	getErr  error
	follows []FollowOptions
}

// newFakePod is a pod with init containers "init" and "sidecar" and
// containers "main" and "wait"; the named ones run (alive, status running),
// "init" has terminated and the rest have no status yet.
func newFakePod(running ...string) *fakePod {
	always := corev1.ContainerRestartPolicyAlways
	p := &fakePod{
		pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "argo", Name: "wf-1", ResourceVersion: "1"},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init"}, {Name: "sidecar", RestartPolicy: &always}},
				Containers:     []corev1.Container{{Name: "main"}, {Name: "wait"}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		},
		alive:   map[string]bool{},
		changed: make(chan struct{}),
	}
	p.pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: terminatedState(0, "init-1")}}
	for _, n := range running {
		p.alive[n] = true
		p.setStatusLocked(n, corev1.ContainerStatus{Name: n, ContainerID: n + "-1", State: runningState()})
	}
	return p
}

func runningState() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Unix(0, 0)}}
}

func terminatedState(code int32, id string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, ContainerID: id}}
}

func (p *fakePod) setStatusLocked(name string, st corev1.ContainerStatus) {
	list := &p.pod.Status.ContainerStatuses
	if name == "init" || name == "sidecar" {
		list = &p.pod.Status.InitContainerStatuses
	}
	if i := slices.IndexFunc(*list, func(s corev1.ContainerStatus) bool { return s.Name == name }); i >= 0 {
		(*list)[i] = st
	} else {
		*list = append(*list, st)
	}
	rv, _ := strconv.Atoi(p.pod.ResourceVersion)
	p.pod.ResourceVersion = strconv.Itoa(rv + 1)
	close(p.changed)
	p.changed = make(chan struct{})
}

// update changes the pod under the lock and tells followers.
func (p *fakePod) update(f func(pod *corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p.pod)
	rv, _ := strconv.Atoi(p.pod.ResourceVersion)
	p.pod.ResourceVersion = strconv.Itoa(rv + 1)
	close(p.changed)
	p.changed = make(chan struct{})
}

// die ends the container's process without the status showing it.
func (p *fakePod) die(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.alive[name] = false
	close(p.changed)
	p.changed = make(chan struct{})
}

// report makes the status show the container terminated with code.
func (p *fakePod) report(name string, code int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, _ := containerStatus(p.pod, name)
	st.State = terminatedState(code, st.ContainerID)
	p.setStatusLocked(name, st)
}

// stop is die and report at once.
func (p *fakePod) stop(name string, code int32) {
	p.die(name)
	p.report(name, code)
}

// Get implements PodSource.
func (p *fakePod) Get(context.Context) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.getErr != nil {
		return nil, p.getErr
	}
	return p.pod.DeepCopy(), nil
}

// Follow implements PodSource: every version after from.
func (p *fakePod) Follow(ctx context.Context, from *corev1.Pod, opts FollowOptions, fn func(*corev1.Pod) error) error {
	p.mu.Lock()
	p.follows = append(p.follows, opts)
	p.mu.Unlock()
	rv := from.ResourceVersion
	for {
		p.mu.Lock()
		pod, changed := p.pod.DeepCopy(), p.changed
		p.mu.Unlock()
		if pod.ResourceVersion != rv {
			rv = pod.ResourceVersion
			if err := fn(pod); err != nil {
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("follow: %w", ctx.Err())
		case <-changed:
		}
	}
}

// waitUntilDead blocks until the container's process dies (then it returns
// the 137 of a session killed with it) or ctx ends.
func (p *fakePod) waitUntilDead(ctx context.Context, name string) error {
	for {
		p.mu.Lock()
		alive, changed := p.alive[name], p.changed
		p.mu.Unlock()
		if !alive {
			return &executor.ExitCodeError{Container: name, Command: "sh -c read -r _", Code: 137}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// execer is a fakeExecer whose waitExit sessions end with the container's
// process; other commands go to other (nil: they succeed).
func (p *fakePod) execer(other func(container string, cmd []string) error) *fakeExecer {
	return &fakeExecer{run: func(ctx context.Context, c string, cmd []string, _ io.Reader, _, _ io.Writer) error {
		if slices.Equal(cmd, waitExitCmd) {
			return p.waitUntilDead(ctx, c)
		}
		if other == nil {
			return nil
		}
		return other(c, cmd)
	}}
}

// newTestEngine is an engine over ex and src with a fake clock.
func newTestEngine(ex Execer, src PodSource) (*Engine, *clocktesting.FakeClock) {
	log, _ := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	fc := clocktesting.NewFakeClock(time.Unix(0, 0))
	e := New(Config{Backend: "k8sapi", Pod: "argo/wf-1", Exec: ex, Source: src, Log: logrus.NewEntry(log), Clock: fc, KillSettle: 50 * time.Millisecond})
	return e, fc
}

// drive steps fc by step whenever something waits on it, until stop is
// closed: the engine's timers fire without the test sleeping.
func drive(t *testing.T, fc *clocktesting.FakeClock, step time.Duration) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if fc.HasWaiters() {
				fc.Step(step)
			}
			runtime.Gosched()
		}
	})
	return func() { close(done); wg.Wait() }
}
