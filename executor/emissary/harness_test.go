package emissary_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/emissary"
	"github.com/argoexec/argoexec/executor/emissary/wrapper"
	"github.com/argoexec/argoexec/executor/executortest"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// pod is a local stand-in for an emissary pod: each container is
// wrapper.Run over a real `sh -c` child, all sharing one directory as
// /var/run/argo. Containers share the test's filesystem, so file cases use
// a container named main whose outputs the template declares.
type pod struct {
	root string
	x    *emissary.Executor
	wg   sync.WaitGroup
}

func startPod(t *testing.T, tmpl *wf.Template, containers []executortest.Container) *pod {
	t.Helper()
	l := logrus.New()
	l.SetOutput(io.Discard)
	p := &pod{root: t.TempDir()}
	var names []string
	for _, c := range containers {
		names = append(names, c.Name)
	}
	x, err := emissary.New(emissary.Config{Root: p.root, Containers: names}, logrus.NewEntry(l))
	if err != nil {
		t.Fatal(err)
	}
	p.x = x
	for _, c := range containers {
		cfg := wrapper.Config{Root: p.root, Name: c.Name, Template: tmpl, IncludeScriptOutput: true,
			Command: []string{"sh", "-c", c.Script}, Env: []string{"PATH=" + os.Getenv("PATH")},
			Stdout: io.Discard, Stderr: io.Discard}
		p.wg.Go(func() { _, _ = wrapper.Run(context.Background(), cfg, logrus.NewEntry(l)) })
	}
	t.Cleanup(func() {
		// Stop what is left through the protocol itself, then join.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = p.x.Kill(ctx, names, time.Second)
		p.wg.Wait()
	})
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestHarnessLifecycle runs the conformance suite's lifecycle containers
// (executortest.Containers, all but "files") under the wrapper and checks
// what the suite checks for a backend that signals from outside PID 1.
func TestHarnessLifecycle(t *testing.T) {
	var cs []executortest.Container
	for _, c := range executortest.Containers() {
		if c.Name != "files" {
			c.Script = strings.ReplaceAll(c.Script, "/tmp/ready", "$READY_"+c.Name)
			cs = append(cs, c)
		}
	}
	dir := t.TempDir()
	for i := range cs {
		cs[i].Script = strings.ReplaceAll(cs[i].Script, "$READY_"+cs[i].Name, filepath.Join(dir, cs[i].Name+".ready"))
	}
	tmpl := &wf.Template{Container: &corev1.Container{Command: []string{"sh"}}}
	p := startPod(t, tmpl, cs)
	for _, n := range []string{"term", "ignore", "running"} {
		waitFor(t, filepath.Join(dir, n+".ready"))
	}
	x := p.x

	if err := x.Wait(ctx(t), []string{"exit0", "exit3"}); err != nil {
		t.Fatalf("Wait(exit0, exit3): %v", err)
	}
	for name, want := range map[string]int{"exit0": 0, "exit3": 3} {
		if got, err := x.GetExitCode(ctx(t), name); err != nil || got != want {
			t.Errorf("GetExitCode(%s) = %d, %v; want %d", name, got, err, want)
		}
	}
	if _, err := x.GetExitCode(ctx(t), "running"); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("GetExitCode(running) err = %v", err)
	}
	for _, combined := range []bool{false, true} {
		rc, err := x.GetOutputStream(ctx(t), "exit0", combined)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if !strings.Contains(string(b), "bye-stdout\n") || strings.Contains(string(b), "bye-stderr") != combined {
			t.Errorf("log (combined=%v) = %q", combined, b)
		}
	}
	wctx, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	if err := x.Wait(wctx, []string{"running"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait(running) = %v, want DeadlineExceeded", err)
	}
	start := time.Now()
	if err := x.Kill(ctx(t), []string{"term"}, 10*time.Second); err != nil {
		t.Fatalf("Kill(term): %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Kill(term) took %s", d)
	}
	const grace = 500 * time.Millisecond
	start = time.Now()
	if err := x.Kill(ctx(t), []string{"ignore"}, grace); err != nil {
		t.Fatalf("Kill(ignore) = %v: the child is not PID 1, SIGKILL must stop it", err)
	}
	if d := time.Since(start); d < grace || d > grace+2*time.Second {
		t.Errorf("Kill(ignore) took %s, want between the grace %s and grace + 2s", d, grace)
	}
	if c, _ := x.GetExitCode(ctx(t), "ignore"); c != wrapper.ExitSignalled {
		t.Errorf("ignore's exit code %d, want 137", c)
	}
	names, _ := x.ListContainerNames(ctx(t))
	for _, c := range cs {
		if !slices.Contains(names, c.Name) {
			t.Errorf("ListContainerNames = %v: missing %q", names, c.Name)
		}
	}
}

// TestHarnessFiles is the suite's file cases for main's declared outputs,
// which the wrapper copies when main exits (the only files an emissary
// wait can read: it shares no filesystem with main).
func TestHarnessFiles(t *testing.T) {
	src := t.TempDir()
	files := executortest.Containers()[0]
	script := strings.ReplaceAll(files.Script, "/tmp/", src+"/")
	script = script[:strings.Index(script, "while true")] + "exit 0"
	tmpl := &wf.Template{Container: &corev1.Container{Command: []string{"sh"}}, Outputs: wf.Outputs{
		Parameters: []wf.Parameter{{Name: "small", ValueFrom: &wf.ValueFrom{Path: src + "/small.txt"}}, {Name: "binary", ValueFrom: &wf.ValueFrom{Path: src + "/binary.bin"}}},
		Artifacts:  []wf.Artifact{{Name: "dir", Path: src + "/dir"}, {Name: "big", Path: src + "/big.bin"}},
	}}
	p := startPod(t, tmpl, []executortest.Container{{Name: "main", Script: script}})
	x := p.x
	if err := x.Wait(ctx(t), []string{"main"}); err != nil {
		t.Fatal(err)
	}
	if got, err := x.GetFileContents(ctx(t), "main", src+"/small.txt"); err != nil || got != "small file\n" {
		t.Errorf("small = %q, %v", got, err)
	}
	want := make([]byte, 256)
	for i := range want {
		want[i] = byte(i)
	}
	if got, err := x.GetFileContents(ctx(t), "main", src+"/binary.bin"); err != nil || !bytes.Equal([]byte(got), want) {
		t.Errorf("binary: %d bytes, %v", len(got), err)
	}
	dest := filepath.Join(t.TempDir(), "big.tgz")
	if err := x.CopyFile(ctx(t), "main", src+"/big.bin", dest, 1); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(dest)
	defer f.Close()
	if err := archiveHas(f, "big.bin", 64<<20); err != nil {
		t.Error(err)
	}
	if err := x.CopyFile(ctx(t), "main", "/nonexistent/dir", filepath.Join(t.TempDir(), "m.tgz"), 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CopyFile(missing) = %v", err)
	}
}

// TestHarnessExitSeen gates the fast path: Wait returns within a few
// polls of the wrapper writing the exit code, not Argo's 1 s. The figure
// is TestExitToWaitMedian's.
func TestHarnessExitSeen(t *testing.T) {
	d := exitToWait(t)
	if d > 500*time.Millisecond {
		t.Errorf("main exit -> Wait returned took %s; the 10 ms poll should see it within a few polls (on a loaded machine, well under 500 ms)", d)
	}
}

// exitToWait starts main, which writes the time (date +%s%N, its last
// command) and exits, and returns how long after that time Wait returned.
// (A file's mtime is no clock here: it is taken from the kernel's coarse
// clock, up to a tick early.)
func exitToWait(t *testing.T) time.Duration {
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	gate := filepath.Join(dir, "go")
	// Wait is already waiting when main exits: main waits for the gate.
	script := "while [ ! -e " + gate + " ]; do sleep 0.01; done; date +%s%N > " + mark + "; exit 0"
	p := startPod(t, &wf.Template{Container: &corev1.Container{Command: []string{"sh"}}}, []executortest.Container{{Name: "main", Script: script}})
	errc := make(chan error, 1)
	var returned time.Time
	go func() {
		err := p.x.Wait(context.Background(), []string{"main"})
		returned = time.Now()
		errc <- err
	}()
	os.WriteFile(gate, nil, 0o644)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("main's time %q: %v", b, err)
	}
	return returned.Sub(time.Unix(0, ns))
}

// TestExitToWaitMedian logs the median of 20 runs; it is the figure, run
// with -run TestExitToWaitMedian -v; TestHarnessExitSeen is the gate.
func TestExitToWaitMedian(t *testing.T) {
	if testing.Short() || os.Getenv("EMISSARY_MEASURE") == "" {
		t.Skip("set EMISSARY_MEASURE=1 to measure")
	}
	var ds []time.Duration
	for range 20 {
		t.Run("run", func(t *testing.T) { ds = append(ds, exitToWait(t)) })
	}
	slices.Sort(ds)
	t.Logf("main exit -> Wait returned over %d runs: median %s, min %s, max %s", len(ds), ds[len(ds)/2], ds[0], ds[len(ds)-1])
}

func archiveHas(r io.Reader, name string, size int64) error {
	return executortestArchive(r, name, size)
}

var _ executor.ContainerRuntimeExecutor = (*emissary.Executor)(nil)

// waitFor polls for a file a child writes when its set-up is done: the
// child's progress has no other signal.
func waitFor(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
}
