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

	"github.com/argoexec/argoexec/executor"
)

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
	if cfg.KillSettle == 0 {
		cfg.KillSettle = 50 * time.Millisecond
	}
	if ex == nil {
		ex = blockingExecer()
	}
	return newExecutor(cfg, logrus.NewEntry(log), client, ex), client, ws
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

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
			return apierrors.NewGone("too old resource version")
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
	if !errors.Is(err, errPodGone) || !strings.Contains(err.Error(), ns+"/"+podName) {
		t.Errorf("Wait = %v, want an error saying pod %s/%s was deleted", err, ns, podName)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	x, _, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("10")}) // the watch never says anything
	start := time.Now()
	err := x.Wait(ctxT(t, 100*time.Millisecond), []string{"main"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Wait took %v to honour a 100ms context", d)
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

// TestWaitFastPath: the exec session into main is killed (137) while the
// watch still says nothing; Wait returns, and GetExitCode waits for the
// status before it reads the code.
func TestWaitFastPath(t *testing.T) {
	released := make(chan struct{})
	ex := &fakeExecer{run: func(ctx context.Context, c string, cmd []string, _ io.Reader, _, _ io.Writer) error {
		if c == "main" && cmd[len(cmd)-1] == "read -r _" {
			return &executor.ExitCodeError{Container: c, Command: strings.Join(cmd, " "), Code: 137}
		}
		<-ctx.Done()
		return ctx.Err()
	}}
	x, _, _ := newTest(t, Config{}, ex, []*corev1.Pod{mainRunning("10")},
		nil, // Wait's watch: silent
		func(w *watch.FakeWatcher) error { // GetExitCode's watch: the status arrives late
			go func() {
				<-released
				w.Modify(mainDone("11", 3))
			}()
			return nil
		},
	)
	ctx := ctxT(t, 5*time.Second)
	if err := x.Wait(ctx, []string{"main"}); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	if !slices.Contains(ex.Calls(), "main: sh -c read -r _") {
		t.Errorf("exec calls = %q, want the fast-path session into main", ex.Calls())
	}
	go func() { time.Sleep(50 * time.Millisecond); close(released) }()
	code, err := x.GetExitCode(ctx, "main")
	if err != nil || code != 3 {
		t.Fatalf("GetExitCode = %d, %v; want 3 from the status", code, err)
	}
}

// TestWaitFastPathNotTrusted: a session that ends without being killed
// (exit 0) says nothing; Wait goes on until the watch shows the exit.
func TestWaitFastPathNotTrusted(t *testing.T) {
	ex := &fakeExecer{run: func(context.Context, string, []string, io.Reader, io.Writer, io.Writer) error { return nil }}
	const delay = 200 * time.Millisecond
	x, _, _ := newTest(t, Config{}, ex, []*corev1.Pod{mainRunning("10")},
		func(w *watch.FakeWatcher) error {
			go func() { time.Sleep(delay); w.Modify(mainDone("11", 0)) }()
			return nil
		})
	start := time.Now()
	if err := x.Wait(ctxT(t, 5*time.Second), []string{"main"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < delay {
		t.Errorf("Wait returned after %v, before the watch showed the exit (%v)", d, delay)
	}
}

func TestWaitFastPathSkippedWithSharedPIDNamespace(t *testing.T) {
	yes := true
	pod := mainRunning("10")
	pod.Spec.ShareProcessNamespace = &yes
	ex := &fakeExecer{run: func(context.Context, string, []string, io.Reader, io.Writer, io.Writer) error {
		return &executor.ExitCodeError{Code: 137}
	}}
	x, _, _ := newTest(t, Config{}, ex, []*corev1.Pod{pod})
	if err := x.Wait(ctxT(t, 200*time.Millisecond), []string{"main"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want it to rely on the (silent) watch", err)
	}
	if len(ex.Calls()) != 0 {
		t.Errorf("exec calls %q in a pod with shareProcessNamespace", ex.Calls())
	}
}

func TestGetExitCode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		container string
		want      int
		wantErr   []string
	}{
		{"terminated", mainDone("1", 3), "main", 3, nil},
		{"init container", mainDone("1", 3), "init", 0, nil},
		{"running", mainRunning("1"), "main", 0, []string{`"main"`, "has not terminated", "running"}},
		{"not started", makePod("1", nil, 0), "main", 0, []string{`"main"`, "waiting: PodInitializing"}},
		{"unknown", mainDone("1", 0), "nope", 0, []string{`"nope"`, "no such container"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, _, _ := newTest(t, Config{}, nil, []*corev1.Pod{tc.pod})
			got, err := x.GetExitCode(ctxT(t, 5*time.Second), tc.container)
			if tc.wantErr == nil {
				if err != nil || got != tc.want {
					t.Fatalf("GetExitCode = %d, %v; want %d", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("GetExitCode = %d, nil; want an error", got)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
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

func TestGetOutputStream(t *testing.T) {
	x, client, _ := newTest(t, Config{}, nil, []*corev1.Pod{mainRunning("1")})
	var seen []*corev1.PodLogOptions
	client.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		opts := a.(k8stesting.GenericActionImpl).Value.(*corev1.PodLogOptions)
		seen = append(seen, opts)
		if opts.Stream != nil {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, podName, nil)
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
		if _, err := x.GetOutputStream(ctx, "main", false); !errors.Is(err, executor.ErrNotSupported) || !strings.Contains(err.Error(), "PodLogsQuerySplitStreams") {
			t.Errorf("GetOutputStream(combined=false) = %v, want ErrNotSupported naming the feature gate", err)
		}
	}
	if len(seen) != 2 || seen[0].Container != "main" || seen[1].Stream == nil || *seen[1].Stream != corev1.LogStreamStdout {
		t.Errorf("pods/log requests = %+v; want combined, then one stdout-only try (remembered)", seen)
	}
}

func TestKill(t *testing.T) {
	yes := true
	shared := mainRunning("1")
	shared.Spec.ShareProcessNamespace = &yes
	hostPID := mainRunning("1")
	hostPID.Spec.HostPID = true
	for _, tc := range []struct {
		name      string
		gets      []*corev1.Pod
		watch     func(*watch.FakeWatcher) error
		wantCalls []string
		wantErr   error
	}{
		{
			name:      "stops on SIGTERM",
			gets:      []*corev1.Pod{mainRunning("1")},
			watch:     func(w *watch.FakeWatcher) error { w.Modify(mainDone("2", 143)); return nil },
			wantCalls: []string{"main: sh -c kill -s TERM 1"},
		},
		{
			name:      "already terminated",
			gets:      []*corev1.Pod{mainDone("1", 0)},
			wantCalls: nil,
		},
		{
			name: "PID 1 survives",
			gets: []*corev1.Pod{mainRunning("1")},
			wantCalls: []string{
				"main: sh -c kill -s TERM 1",
				"main: sh -c kill -s KILL -1 2>/dev/null; true",
			},
			wantErr: executor.ErrPID1Survived,
		},
		{"shareProcessNamespace", []*corev1.Pod{shared}, nil, nil, executor.ErrNotSupported},
		{"hostPID", []*corev1.Pod{hostPID}, nil, nil, executor.ErrNotSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &fakeExecer{run: func(context.Context, string, []string, io.Reader, io.Writer, io.Writer) error { return nil }}
			var watches []func(*watch.FakeWatcher) error
			if tc.watch != nil {
				watches = append(watches, tc.watch)
			}
			x, _, _ := newTest(t, Config{}, ex, tc.gets, watches...)
			err := x.Kill(ctxT(t, 5*time.Second), []string{"main"}, 100*time.Millisecond)
			if !slices.Equal(ex.Calls(), tc.wantCalls) {
				t.Errorf("exec calls = %q, want %q", ex.Calls(), tc.wantCalls)
			}
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Kill = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil && !strings.Contains(err.Error(), "main") && tc.wantErr == executor.ErrPID1Survived {
				t.Errorf("error %q does not name the container", err)
			}
		})
	}
}
