package k8sapi

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/internal/podexec"
	"github.com/argoexec/argoexec/executor/internal/stdoutlog"
	"github.com/argoexec/argoexec/pkg/kubeclient/kubeclienttest"
)

// The flow settles and checks main's log through LogChecker before it
// reports the result.
var _ flow.LogChecker = (*Executor)(nil)

const (
	ns      = "argo"
	podName = "wf-1"
)

// fakeExecer is a hand-written podexec.Execer.
type fakeExecer struct {
	run func(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error

	mu    sync.Mutex
	calls []string
}

func (f *fakeExecer) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeExecer) Exec(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f.mu.Lock()
	f.calls = append(f.calls, container+": "+strings.Join(cmd, " "))
	f.mu.Unlock()
	return f.run(ctx, container, cmd, stdin, stdout, stderr)
}

// blockingExecer holds every session open until its context ends.
func blockingExecer() *fakeExecer {
	return &fakeExecer{run: func(ctx context.Context, _ string, _ []string, _ io.Reader, _, _ io.Writer) error {
		<-ctx.Done()
		return ctx.Err()
	}}
}

type state int

const (
	waiting state = iota
	running
	terminated
)

// makePod is the test pod at resourceVersion rv with the given states of
// its containers (main, wait) and init containers (init, sidecar).
func makePod(rv string, states map[string]state, exitCode int32) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, ResourceVersion: rv},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}, {Name: "sidecar", RestartPolicy: &always}},
			Containers:     []corev1.Container{{Name: "main"}, {Name: "wait"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	status := func(name string) corev1.ContainerStatus {
		st := corev1.ContainerStatus{Name: name}
		switch states[name] {
		case waiting:
			st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
		case running:
			st.State.Running = &corev1.ContainerStateRunning{}
		case terminated:
			st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: exitCode}
		}
		return st
	}
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, status(c.Name))
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, status(c.Name))
	}
	return pod
}

func mainRunning(rv string) *corev1.Pod {
	return makePod(rv, map[string]state{"init": terminated, "sidecar": running, "main": running, "wait": running}, 0)
}

func mainDone(rv string, code int32) *corev1.Pod {
	p := makePod(rv, map[string]state{"init": terminated, "sidecar": running, "main": terminated, "wait": running}, 0)
	p.Status.ContainerStatuses[0].State.Terminated.ExitCode = code
	return p
}

// watchScript answers the n-th watch with the n-th function; watches
// beyond the script block until stopped. It records each watch's
// resourceVersion and field selector.
type watchScript struct {
	mu    sync.Mutex
	steps []func(w *watch.FakeWatcher) error
	rvs   []string
	sels  []string
}

func (s *watchScript) react(a k8stesting.Action) (bool, watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wa := a.(k8stesting.WatchActionImpl)
	s.rvs = append(s.rvs, wa.WatchRestrictions.ResourceVersion)
	s.sels = append(s.sels, wa.WatchRestrictions.Fields.String())
	w := watch.NewFakeWithChanSize(10, false)
	if i := len(s.rvs) - 1; i < len(s.steps) && s.steps[i] != nil {
		if err := s.steps[i](w); err != nil {
			return true, nil, err
		}
	}
	return true, w, nil
}

func (s *watchScript) watches() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rvs), slices.Clone(s.sels)
}

// getScript answers the n-th GET of the pod with the n-th pod; the last one
// repeats.
type getScript struct {
	mu   sync.Mutex
	pods []*corev1.Pod
	n    int
}

func (g *getScript) react(k8stesting.Action) (bool, runtime.Object, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pods[min(g.n, len(g.pods)-1)]
	g.n++
	return true, p.DeepCopy(), nil
}

func newTest(t *testing.T, cfg Config, ex *fakeExecer, gets []*corev1.Pod, watches ...func(*watch.FakeWatcher) error) (*Executor, *fake.Clientset, *watchScript) {
	t.Helper()
	client := fake.NewClientset()
	g := &getScript{pods: gets}
	client.PrependReactor("get", "pods", g.react)
	ws := &watchScript{steps: watches}
	client.PrependWatchReactor("pods", ws.react)
	log, _ := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	cfg.Namespace, cfg.PodName = ns, podName
	if ex == nil {
		ex = blockingExecer()
	}
	x := &Executor{cfg: cfg, log: logrus.NewEntry(log), client: kubeclienttest.FromClientset(client)}
	x.Engine = x.newEngine(ex, clocktesting.NewFakeClock(time.Unix(0, 0)))
	return x, client, ws
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// The engine's own logic (the fast path, exit codes, Kill) is tested in
// podexec over a fake PodSource; these tests cover what this package adds:
// the pod watch, pods/log, and the permissions a 403 names.

// TestWaitAlreadyTerminated: a container terminated at the first GET is not
// watched.
func TestWaitAlreadyTerminated(t *testing.T) {
	x, client, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainDone("1", 0)})
	if err := x.Wait(ctxT(t, 5*time.Second), []string{"main"}); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "watch" {
			t.Errorf("Wait on a terminated container watched the pod")
		}
	}
}

// TestWaitResumesAfterClose: RetryWatcher resumes a watch the server closed
// from the last resourceVersion seen (after client-go's 1 s restart delay).
func TestWaitResumesAfterClose(t *testing.T) {
	x, _, ws := newTest(t, Config{NoExecWait: true}, nil, []*corev1.Pod{mainRunning("10")},
		func(w *watch.FakeWatcher) error {
			w.Modify(mainRunning("11"))
			w.Stop() // the server closes the watch
			return nil
		},
		func(w *watch.FakeWatcher) error {
			w.Modify(mainDone("12", 0))
			return nil
		},
	)
	if err := x.Wait(ctxT(t, 5*time.Second), []string{"main"}); err != nil {
		t.Fatal(err)
	}
	rvs, sels := ws.watches()
	if !slices.Equal(rvs, []string{"10", "11"}) {
		t.Errorf("watches started from resourceVersions %v, want [10 11]: the GET's, then the last seen", rvs)
	}
	if sels[0] != "metadata.name="+podName {
		t.Errorf("field selector = %q", sels[0])
	}
}

// TestWaitRelistsOnGone: a 410, as an event or from the watch call, is not
// retried from the same version: the pod is read again and watched from there.
func TestWaitRelistsOnGone(t *testing.T) {
	expired := func(w *watch.FakeWatcher) error {
		w.Error(&apierrors.NewResourceExpired("too old resource version: 10 (20)").ErrStatus)
		return nil
	}
	for _, tc := range []struct {
		name  string
		watch func(*watch.FakeWatcher) error
	}{
		{"410 event", expired},
		{"410 from the watch call", func(*watch.FakeWatcher) error {
			return apierrors.NewResourceExpired("too old resource version")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, client, ws := newTest(t, Config{NoExecWait: true}, nil,
				[]*corev1.Pod{mainRunning("10"), mainRunning("30")},
				tc.watch,
				func(w *watch.FakeWatcher) error { w.Modify(mainDone("31", 0)); return nil },
			)
			if err := x.Wait(ctxT(t, 5*time.Second), []string{"main"}); err != nil {
				t.Fatal(err)
			}
			gets := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "get" {
					gets++
				}
			}
			if gets != 2 {
				t.Errorf("%d GETs, want 2 (the first read and the relist)", gets)
			}
			if rvs, _ := ws.watches(); !slices.Equal(rvs, []string{"10", "30"}) {
				t.Errorf("watches from %v, want [10 30]: the relist's version after 410", rvs)
			}
		})
	}
}

func TestWaitPodDeleted(t *testing.T) {
	x, _, _ := newTest(t, Config{NoExecWait: true}, nil, []*corev1.Pod{mainRunning("10")},
		func(w *watch.FakeWatcher) error { w.Delete(mainRunning("11")); return nil })
	err := x.Wait(ctxT(t, 5*time.Second), []string{"main"})
	if !errors.Is(err, podexec.ErrPodGone) || !strings.Contains(err.Error(), ns+"/"+podName) {
		t.Errorf("Wait = %v, want an error saying pod %s/%s was deleted", err, ns, podName)
	}
}

// TestWaitWatchForbidden: a watch refused with 403 ends Wait with the
// permission that is missing (RetryWatcher does not retry it).
func TestWaitWatchForbidden(t *testing.T) {
	x, _, _ := newTest(t, Config{NoExecWait: true}, nil, []*corev1.Pod{mainRunning("10")},
		func(*watch.FakeWatcher) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, podName, errors.New("RBAC: denied"))
		})
	err := x.Wait(ctxT(t, 5*time.Second), []string{"main"})
	for _, w := range []string{`"watch" on "pods"`, "namespace " + ns, "wait for containers [main]"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not contain %q", err, w)
		}
	}
	checkPrefixOnce(t, err)
}

// TestWaitRewatchRefusedAfterRestart: once the watch has worked, a re-watch
// refused with 403 or 401 (an API server that has just restarted, before
// its RBAC caches are filled; a token just rotated) is retried, and Wait
// ends with the exit it then sees. The fault suite's APIServerDown10s on
// k8sapi failed on this before.
func TestWaitRewatchRefusedAfterRestart(t *testing.T) {
	forbidden := func(*watch.FakeWatcher) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, podName, errors.New("RBAC: not yet"))
	}
	x, _, ws := newTest(t, Config{NoExecWait: true}, nil, []*corev1.Pod{mainRunning("10")},
		func(w *watch.FakeWatcher) error { w.Modify(mainRunning("11")); w.Stop(); return nil },
		forbidden,
		func(*watch.FakeWatcher) error { return apierrors.NewUnauthorized("token not yet valid") },
		func(w *watch.FakeWatcher) error { w.Modify(mainDone("12", 0)); return nil },
	)
	if err := x.Wait(ctxT(t, 10*time.Second), []string{"main"}); err != nil {
		t.Fatal(err)
	}
	if rvs, _ := ws.watches(); !slices.Equal(rvs, []string{"10", "11", "11", "11"}) {
		t.Errorf("watches from %v, want [10 11 11 11]: the refused re-watches retried from the last version seen", rvs)
	}
}

// TestRefused: which refusals podWatcher retries, and that it stops after
// maxRefusals in a row.
func TestRefused(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, podName, errors.New("denied"))
	x, _, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("1")})
	for _, tc := range []struct {
		name   string
		worked bool
		err    error
		want   bool
	}{
		{"first watch refused: the grant is missing", false, forbidden, false},
		{"403 after a watch worked", true, forbidden, true},
		{"401 after a watch worked", true, apierrors.NewUnauthorized("expired"), true},
		{"500 is not a refusal", true, apierrors.NewInternalError(errors.New("x")), false},
		{"connection refused is not a refusal", true, errors.New("dial tcp: connection refused"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &podWatcher{e: x, worked: tc.worked}
			if got := w.refused("watch pod", tc.err); got != tc.want {
				t.Errorf("refused(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		w := &podWatcher{e: x, worked: true}
		n := 0
		for w.refused("watch pod", forbidden) {
			if n++; n > maxRefusals {
				break
			}
		}
		if n != maxRefusals {
			t.Errorf("%d refusals retried in a row, want %d", n, maxRefusals)
		}
	})
}

// TestRelistRefusedAfterRestart: the GET after a 410 is retried on a 403
// (the watch worked, so it is the restart), refusalDelay apart on the
// engine's clock.
func TestRelistRefusedAfterRestart(t *testing.T) {
	x, client, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("30")})
	n := 0
	client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if n++; n <= 2 {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, podName, errors.New("RBAC: not yet"))
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	s := watchSource{e: x, clock: clk}
	done := make(chan error, 1)
	go func() {
		_, err := s.relist(ctxT(t, 10*time.Second), &podWatcher{e: x, worked: true})
		done <- err
	}()
	var err error
	for stepped := 0; ; {
		if clk.HasWaiters() && stepped < 2 {
			clk.Step(refusalDelay)
			stepped++
		}
		select {
		case err = <-done:
		case <-time.After(time.Millisecond):
			continue
		}
		break
	}
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d GETs, want 3 (two refused, then the pod)", n)
	}
}

// TestWaitHonoursContext: Wait ends with its context while the watch says
// nothing and the exec session holds.
func TestWaitHonoursContext(t *testing.T) {
	x, _, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("10")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := x.Wait(ctx, []string{"main"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want an error wrapping context.Canceled", err)
	}
}

func TestWaitUnknownContainer(t *testing.T) {
	x, _, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("10")})
	err := x.Wait(ctxT(t, time.Second), []string{"mian"})
	if err == nil || !strings.Contains(err.Error(), `"mian"`) && !strings.Contains(err.Error(), "mian") {
		t.Fatalf("Wait = %v, want an error naming the unknown container", err)
	}
}

func TestWaitPodFinishedWithoutContainer(t *testing.T) {
	failed := makePod("11", map[string]state{"init": terminated, "main": waiting}, 1)
	failed.Status.Phase = corev1.PodFailed
	x, _, _ := newTest(t, Config{NoExecWait: true}, nil, []*corev1.Pod{mainRunning("10")},
		func(w *watch.FakeWatcher) error { w.Modify(failed); return nil })
	err := x.Wait(ctxT(t, 5*time.Second), []string{"main"})
	if err == nil || !strings.Contains(err.Error(), "never terminated") {
		t.Fatalf("Wait = %v, want an error saying main never terminated", err)
	}
}

func TestListContainerNames(t *testing.T) {
	x, _, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("1")})
	got, err := x.ListContainerNames(ctxT(t, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"init", "sidecar", "main", "wait"}; !slices.Equal(got, want) {
		t.Errorf("ListContainerNames = %v, want %v (init containers first)", got, want)
	}
}

func TestForbiddenNamesPermission(t *testing.T) {
	x, client, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("1")})
	client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, podName, errors.New("RBAC: denied"))
	})
	_, err := x.ListContainerNames(ctxT(t, time.Second))
	t.Log(err)
	for _, w := range []string{`"get" on "pods"`, "namespace " + ns, "forbidden"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not contain %q", err, w)
		}
	}
	checkPrefixOnce(t, err)
}

// checkPrefixOnce checks that err says "k8sapi:" and names the pod once
// each: every layer adds its own part, none repeats another's.
func checkPrefixOnce(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if n := strings.Count(err.Error(), "k8sapi:"); n != 1 {
		t.Errorf("error %q says k8sapi: %d times, want once", err, n)
	}
	if n := strings.Count(err.Error(), ns+"/"+podName); n != 1 {
		t.Errorf("error %q names pod %s/%s %d times, want once", err, ns, podName, n)
	}
}

func TestForbiddenExecNamesPermission(t *testing.T) {
	ex := &fakeExecer{run: func(context.Context, string, []string, io.Reader, io.Writer, io.Writer) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods/exec"}, podName, errors.New("RBAC: denied"))
	}}
	x, _, _ := newTest(t, Config{}, ex, []*corev1.Pod{mainRunning("1")})
	_, err := x.GetFileContents(ctxT(t, time.Second), "main", "/tmp/out")
	t.Log(err)
	for _, w := range []string{`"create" on "pods/exec"`, "namespace " + ns, "/tmp/out", `"main"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not contain %q", err, w)
		}
	}
}

// TestGetOutputStream: combined is the plain log; stdout alone is asked
// for with stream=Stdout, trusted only once a probe shows the server knows
// the field, and refused (remembered) where the gate is off or the server
// ignores the field.
func TestGetOutputStream(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, podName, nil)
	badRequest := apierrors.NewBadRequest("unable to return the given log stream: \"Stdout\". Please enable PodLogsQuerySplitStreams feature gate in kubelet")
	for _, tc := range []struct {
		name string
		// answer is the server's answer to a request for stream (nil: none).
		answer      func(stream *string) error
		wantStdout  bool
		wantStreams []string // the stream of each request after the combined one, "" for none
	}{
		{
			name: "gate on",
			answer: func(s *string) error {
				if s != nil && *s == stdoutlog.ProbeStream {
					return invalid
				}
				return nil
			},
			wantStdout:  true,
			wantStreams: []string{"Stdout", stdoutlog.ProbeStream, "Stdout"},
		},
		{
			name:        "gate off on the API server",
			answer:      func(s *string) error { return map[bool]error{true: invalid}[s != nil] },
			wantStreams: []string{"Stdout", stdoutlog.ProbeStream}, // the probe runs beside the first request
		},
		{
			name:        "gate off on the kubelet",
			answer:      func(s *string) error { return map[bool]error{true: badRequest}[s != nil] },
			wantStreams: []string{"Stdout", stdoutlog.ProbeStream}, // the probe runs beside the first request
		},
		{
			name:        "server older than 1.32 ignores the field",
			answer:      func(*string) error { return nil },
			wantStreams: []string{"Stdout", stdoutlog.ProbeStream},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, client, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("1")})
			var mu sync.Mutex
			var seen []*corev1.PodLogOptions
			client.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "log" {
					return false, nil, nil
				}
				opts := a.(k8stesting.GenericActionImpl).Value.(*corev1.PodLogOptions)
				mu.Lock()
				seen = append(seen, opts)
				mu.Unlock()
				if err := tc.answer(opts.Stream); err != nil {
					return true, nil, err
				}
				return true, &runtime.Unknown{Raw: []byte("out\nerr\n")}, nil
			})
			ctx := ctxT(t, time.Second)
			rc, err := x.GetOutputStream(ctx, "main", true)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if string(b) != "out\nerr\n" {
				t.Errorf("log = %q", b)
			}
			for range 2 {
				rc, err := x.GetOutputStream(ctx, "main", false)
				if tc.wantStdout {
					if err != nil {
						t.Fatalf("GetOutputStream(combined=false) = %v", err)
					}
					rc.Close()
					continue
				}
				if !errors.Is(err, executor.ErrNotSupported) || !strings.Contains(err.Error(), "PodLogsQuerySplitStreams") {
					t.Errorf("GetOutputStream(combined=false) = %v, want ErrNotSupported naming the feature gate", err)
				}
			}
			var streams []string
			for _, o := range seen[1:] {
				s := ""
				if o.Stream != nil {
					s = *o.Stream
				}
				streams = append(streams, s)
			}
			// The probe and the first stdout-only request run side by side, in either order.
			slices.Sort(streams)
			if seen[0].Stream != nil || !slices.Equal(streams, slices.Sorted(slices.Values(tc.wantStreams))) {
				t.Errorf("pods/log streams after the combined request = %q, want %q", streams, tc.wantStreams)
			}
		})
	}
}
