package emissary

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/argoexec/argoexec/executor/emissary/wrapper"
)

func testLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

func newTest(t *testing.T, cfg Config) (*Executor, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	cfg.Root = t.TempDir()
	cfg.Clock = clk
	e, err := New(cfg, testLog())
	if err != nil {
		t.Fatal(err)
	}
	return e, clk
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNewNeedsTheVolume(t *testing.T) {
	_, err := New(Config{Root: filepath.Join(t.TempDir(), "none")}, testLog())
	if err == nil || !strings.Contains(err.Error(), "var-run-argo") {
		t.Fatalf("err = %v, want it to name the var-run-argo volume", err)
	}
}

func TestFiles(t *testing.T) {
	e, _ := newTest(t, Config{})
	write(t, wrapper.ParameterPath(e.cfg.Root, "/tmp/p"), "value\n")
	write(t, wrapper.ArtifactPath(e.cfg.Root, "/tmp/dir/"), "tgz bytes")
	ctx := context.Background()
	tests := []struct {
		name    string
		do      func() (string, error)
		want    string
		wantErr []string
	}{
		{name: "parameter", do: func() (string, error) { return e.GetFileContents(ctx, "main", "/tmp/p") }, want: "value\n"},
		{name: "parameter missing", do: func() (string, error) { return e.GetFileContents(ctx, "main", "/tmp/q") }, wantErr: []string{"main", "/tmp/q", "when main exits"}},
		{name: "artifact", do: func() (string, error) {
			d := filepath.Join(t.TempDir(), "a.tgz")
			err := e.CopyFile(ctx, "main", "/tmp/dir", d, 1)
			b, _ := os.ReadFile(d)
			return string(b), err
		}, want: "tgz bytes"},
		{name: "artifact missing", do: func() (string, error) {
			return "", e.CopyFile(ctx, "main", "/tmp/none", filepath.Join(t.TempDir(), "a.tgz"), 1)
		}, wantErr: []string{"main", "/tmp/none"}},
		{name: "parameter path cannot climb out", do: func() (string, error) { return e.GetFileContents(ctx, "main", "../../../etc/passwd") }, wantErr: []string{"etc/passwd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.do()
			if tt.wantErr == nil {
				if err != nil || got != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("err %v does not wrap fs.ErrNotExist", err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestExitCodeAndStreams(t *testing.T) {
	e, _ := newTest(t, Config{})
	ctx := context.Background()
	write(t, e.ctrPath("a", "exitcode"), "3")
	write(t, e.ctrPath("bad", "exitcode"), "x")
	write(t, e.ctrPath("a", "stdout"), "out")
	write(t, e.ctrPath("a", "combined"), "out+err")
	if c, err := e.GetExitCode(ctx, "a"); c != 3 || err != nil {
		t.Errorf("GetExitCode(a) = %d, %v", c, err)
	}
	if _, err := e.GetExitCode(ctx, "b"); err == nil || !strings.Contains(err.Error(), `"b" is still running`) {
		t.Errorf("GetExitCode(b) err = %v", err)
	}
	if _, err := e.GetExitCode(ctx, "bad"); err == nil || !strings.Contains(err.Error(), "not an exit code") {
		t.Errorf("GetExitCode(bad) err = %v", err)
	}
	for combined, want := range map[bool]string{false: "out", true: "out+err"} {
		rc, err := e.GetOutputStream(ctx, "a", combined)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != want {
			t.Errorf("GetOutputStream(combined=%v) = %q, want %q", combined, b, want)
		}
	}
	if _, err := e.GetOutputStream(ctx, "b", false); err == nil || !strings.Contains(err.Error(), "ARGO_INCLUDE_SCRIPT_OUTPUT") {
		t.Errorf("GetOutputStream(b) err = %v", err)
	}
}

func TestWait(t *testing.T) {
	e, clk := newTest(t, Config{})
	write(t, e.ctrPath("done", "exitcode"), "0")
	if err := e.Wait(context.Background(), []string{"done"}); err != nil {
		t.Fatalf("Wait on an exited container: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- e.Wait(context.Background(), []string{"done", "main"}) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(DefaultPoll)
	select {
	case err := <-errc:
		t.Fatalf("Wait returned %v while main runs", err)
	case <-time.After(20 * time.Millisecond):
	}
	write(t, e.ctrPath("main", "exitcode"), "0")
	clk.Step(DefaultPoll)
	if err := <-errc; err != nil {
		t.Fatalf("Wait: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { errc <- e.Wait(ctx, []string{"never"}) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "never") {
		t.Fatalf("Wait after cancel = %v, want context.Canceled naming the container", err)
	}
}

// TestWaitLogsExit: Wait logs each exit code it found, with the signal a
// code of 128+N reports (what says why main ended when the kubelet's
// SIGTERM reached main's wrapper before wait).
func TestWaitLogsExit(t *testing.T) {
	for _, tc := range []struct {
		code, want string
	}{
		{"0", "exitCode=0"},
		{"1", "exitCode=1"},
		{"143", "exitCode=143 signal=SIGTERM"},
		{"137", "exitCode=137 signal=any (the wrapper's code for a command a signal killed; its log names the signal)"},
		{"130", "exitCode=130 signal=SIGINT"},
		{"255", "exitCode=255"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			e, _ := newTest(t, Config{})
			var buf strings.Builder
			l := logrus.New()
			l.SetOutput(&buf)
			l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true, DisableQuote: true})
			e.log = logrus.NewEntry(l)
			write(t, e.ctrPath("main", "exitcode"), tc.code)
			if err := e.Wait(context.Background(), []string{"main"}); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			if !strings.Contains(got, "msg=container exited container=main "+tc.want+"\n") {
				t.Errorf("log = %q, want it to end the exit line with %q", got, tc.want)
			}
		})
	}
}

// fakeWrapper stands in for a wrapper: it consumes name's signal file and
// exits (writes the exit code) on the signals in obeys.
func fakeWrapper(t *testing.T, e *Executor, name string, obeys ...string) (seen func() []string, stop func()) {
	t.Helper()
	os.MkdirAll(e.ctrPath(name), 0o777)
	var mu sync.Mutex
	var got []string
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
			b, err := os.ReadFile(e.ctrPath(name, "signal"))
			if err != nil {
				continue
			}
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
			// The exit code is written before the signal file goes, so a
			// consumed signal file means this wrapper has acted on it.
			obeyed := false
			for _, o := range obeys {
				if string(b) == o {
					write(t, e.ctrPath(name, "exitcode"), "137")
					obeyed = true
				}
			}
			os.Remove(e.ctrPath(name, "signal"))
			if obeyed {
				return
			}
		}
	})
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }, func() { close(quit); wg.Wait() }
}

// stepUntil advances clk while the call runs, by d at a time and only when
// settled reports that the fake wrapper has consumed the last signal: the
// fake clock never outruns the wrapper's real-time polling, however loaded
// the machine is.
func stepUntil(clk *clocktesting.FakeClock, d time.Duration, settled func() bool, done <-chan error) error {
	for {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Millisecond):
			if clk.HasWaiters() && settled() {
				clk.Step(d)
			}
		}
	}
}

func TestKill(t *testing.T) {
	tests := []struct {
		name     string
		obeys    []string
		started  bool
		exited   bool
		wantSeen string
		wantErr  []string
	}{
		{name: "exits on TERM", started: true, obeys: []string{"15"}, wantSeen: "15"},
		{name: "ignores TERM, dies on KILL", started: true, obeys: []string{"9"}, wantSeen: "15,9"},
		{name: "survives both", started: true, wantSeen: "15,9", wantErr: []string{`"side"`, "still running", "did not write an exit code"}},
		{name: "never started", wantErr: []string{`"side"`, "had not started under argoexec emissary"}},
		{name: "already exited", exited: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, clk := newTest(t, Config{})
			seen := func() []string { return nil }
			if tt.started {
				var stop func()
				seen, stop = fakeWrapper(t, e, "side", tt.obeys...)
				defer stop()
			}
			if tt.exited {
				write(t, e.ctrPath("side", "exitcode"), "0")
			}
			done := make(chan error, 1)
			go func() { done <- e.Kill(context.Background(), []string{"side"}, 30*time.Second) }()
			settled := func() bool {
				if !tt.started {
					return true // nothing reads the signal file
				}
				_, err := os.Stat(e.ctrPath("side", "signal"))
				return err != nil
			}
			err := stepUntil(clk, time.Second, settled, done)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Kill: %v", err)
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Kill err = %v, want it to contain %q", err, w)
				}
			}
			if tt.started {
				// Give the fake wrapper time to consume the last signal.
				deadline := time.Now().Add(2 * time.Second)
				for strings.Join(seen(), ",") != tt.wantSeen && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if got := strings.Join(seen(), ","); got != tt.wantSeen {
					t.Errorf("signals seen %q, want %q", got, tt.wantSeen)
				}
			}
			if tt.exited {
				if _, err := os.Stat(e.ctrPath("side", "signal")); err == nil {
					t.Errorf("an exited container was signalled")
				}
			}
		})
	}
}

func TestListContainerNames(t *testing.T) {
	e, _ := newTest(t, Config{})
	if names, err := e.ListContainerNames(context.Background()); err != nil || len(names) != 0 {
		t.Errorf("empty volume: %v %v", names, err)
	}
	os.MkdirAll(e.ctrPath("main"), 0o777)
	os.MkdirAll(e.ctrPath("side"), 0o777)
	if names, err := e.ListContainerNames(context.Background()); err != nil || strings.Join(names, ",") != "main,side" {
		t.Errorf("from ctr dirs: %v %v", names, err)
	}
	e.cfg.Containers = []string{"init", "wait", "main", "istio-proxy"}
	if names, _ := e.ListContainerNames(context.Background()); strings.Join(names, ",") != "init,wait,main,istio-proxy" {
		t.Errorf("from Config: %v", names)
	}
}
