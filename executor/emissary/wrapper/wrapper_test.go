package wrapper

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func testLog(t *testing.T) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

func shTemplate() *wf.Template {
	return &wf.Template{Container: &corev1.Container{Image: "busybox", Command: []string{"sh"}}}
}

// syncBuffer is a bytes.Buffer safe for the child's stdout and stderr copiers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	root, dir      string
	code           int
	err            error
	stdout, stderr *syncBuffer
}

func (r result) file(t *testing.T, name string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		return "", false
	}
	return string(b), true
}

func runSh(t *testing.T, cfg Config, script string) result {
	t.Helper()
	r := result{root: t.TempDir(), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	if cfg.Name == "" {
		cfg.Name = wf.MainContainerName
	}
	r.dir = filepath.Join(r.root, "ctr", cfg.Name)
	cfg.Root = r.root
	if cfg.Command == nil {
		cfg.Command = []string{"sh", "-c", strings.ReplaceAll(script, "$ROOT", r.root)}
	}
	if cfg.Env == nil {
		cfg.Env = []string{"PATH=" + os.Getenv("PATH")}
	}
	cfg.Stdout, cfg.Stderr = r.stdout, r.stderr
	if cfg.Poll == 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.code, r.err = Run(ctx, cfg, testLog(t))
	return r
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		script   string
		wantCode int
		wantErr  string
	}{
		{name: "success", script: "exit 0", wantCode: 0},
		{name: "failure code passed on", script: "exit 3", wantCode: 3},
		{name: "killed by a signal is 137", script: "kill -9 $$", wantCode: 137},
		{name: "command not in PATH", cfg: Config{Command: []string{"no-such-command-xyz"}}, wantCode: 64, wantErr: `find command "no-such-command-xyz"`},
		{name: "nothing after --", cfg: Config{Command: []string{}}, wantCode: 64, wantErr: "nothing to run"},
		{name: "no command in the template, nothing after --",
			cfg:      Config{Command: []string{}, Template: &wf.Template{Container: &corev1.Container{Image: "my/image:1"}}},
			wantCode: 64, wantErr: `images["my/image:1"].command`},
		{name: "args alone arrive",
			cfg:      Config{Command: []string{"--port", "80"}, Template: &wf.Template{Container: &corev1.Container{Image: "nginx", Args: []string{"--port", "80"}}}},
			wantCode: 64, wantErr: `has no command, only args ["--port" "80"]`},
		{name: "no template file", cfg: Config{}, script: "exit 0", wantCode: 64, wantErr: "read the template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg.Template == nil && tt.name != "no template file" {
				cfg.Template = shTemplate()
			}
			r := runSh(t, cfg, tt.script)
			if r.code != tt.wantCode {
				t.Errorf("code = %d, want %d (err %v)", r.code, tt.wantCode, r.err)
			}
			if tt.wantErr == "" && r.err != nil {
				t.Errorf("err = %v", r.err)
			}
			if tt.wantErr != "" && (r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want it to contain %q", r.err, tt.wantErr)
			}
			got, ok := r.file(t, "exitcode")
			if !ok || got != strconv.Itoa(tt.wantCode) {
				t.Errorf("exitcode file = %q (exists %v), want %d", got, ok, tt.wantCode)
			}
			if st, err := os.Stat(r.dir); err != nil || st.Mode().Perm() != 0o777 {
				t.Errorf("ctr dir: %v, mode %v; want 0777", err, st.Mode().Perm())
			}
		})
	}
}

func TestRunNoContainerName(t *testing.T) {
	code, err := Run(context.Background(), Config{Root: t.TempDir(), Command: []string{"true"}}, testLog(t))
	if code != ExitWrapperFailed || err == nil || !strings.Contains(err.Error(), "ARGO_CONTAINER_NAME") {
		t.Fatalf("code %d, err %v; want 64 naming ARGO_CONTAINER_NAME", code, err)
	}
}

func TestRunCapture(t *testing.T) {
	archive := true
	tests := []struct {
		name         string
		cfg          Config
		wantCaptured bool
	}{
		{name: "ARGO_INCLUDE_SCRIPT_OUTPUT", cfg: Config{IncludeScriptOutput: true, Template: shTemplate()}, wantCaptured: true},
		{name: "archived logs", cfg: Config{Template: &wf.Template{Container: &corev1.Container{Command: []string{"sh"}}, ArchiveLocation: &wf.ArtifactLocation{ArchiveLogs: &archive}}}, wantCaptured: true},
		{name: "script template", cfg: Config{Template: &wf.Template{Script: &wf.ScriptTemplate{Container: corev1.Container{Command: []string{"sh"}}}}}, wantCaptured: true},
		{name: "not needed", cfg: Config{Template: shTemplate()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runSh(t, tt.cfg, "echo out1; echo err1 >&2; echo out2")
			if r.code != 0 || r.err != nil {
				t.Fatalf("code %d err %v", r.code, r.err)
			}
			if r.stdout.String() != "out1\nout2\n" || r.stderr.String() != "err1\n" {
				t.Errorf("container streams: stdout %q stderr %q", r.stdout, r.stderr)
			}
			stdout, ok := r.file(t, "stdout")
			if ok != tt.wantCaptured {
				t.Fatalf("stdout file exists %v, want %v", ok, tt.wantCaptured)
			}
			if !ok {
				return
			}
			combined, _ := r.file(t, "combined")
			if stdout != "out1\nout2\n" {
				t.Errorf("stdout file = %q", stdout)
			}
			for _, l := range []string{"out1\n", "err1\n", "out2\n"} {
				if !strings.Contains(combined, l) || len(combined) != len("out1\nerr1\nout2\n") {
					t.Errorf("combined file = %q, want out1, err1 and out2", combined)
				}
			}
			for _, f := range []string{"stdout", "combined"} {
				if st, _ := os.Stat(filepath.Join(r.dir, f)); st.Mode().Perm() != 0o666 {
					t.Errorf("%s mode %v, want 0666", f, st.Mode().Perm())
				}
			}
		})
	}
}

func TestRunOutputs(t *testing.T) {
	src := t.TempDir()
	vol := filepath.Join(src, "vol")
	level := int32(1)
	tmpl := &wf.Template{
		Container: &corev1.Container{Command: []string{"sh"}, VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: vol + "/"}}},
		Outputs: wf.Outputs{
			Parameters: []wf.Parameter{
				{Name: "p", ValueFrom: &wf.ValueFrom{Path: src + "/p.txt"}},
				{Name: "onvol", ValueFrom: &wf.ValueFrom{Path: vol + "/q.txt"}},
				{Name: "missing", ValueFrom: &wf.ValueFrom{Path: src + "/nope"}},
			},
			Artifacts: []wf.Artifact{
				{Name: "dir", Path: src + "/dir/", Archive: &wf.ArchiveStrategy{Tar: &wf.TarStrategy{CompressionLevel: &level}}},
				{Name: "onvol", Path: vol + "/a"},
				{Name: "missing", Path: src + "/none"},
			},
		},
	}
	script := "mkdir -p " + src + "/dir/sub " + vol + "/a; echo pv > " + src + "/p.txt; echo q > " + vol + "/q.txt; echo b > " + src + "/dir/sub/b.txt; exit 5"
	for _, name := range []string{"main", "sidecar"} {
		t.Run(name, func(t *testing.T) {
			r := runSh(t, Config{Name: name, Template: tmpl}, script)
			if r.code != 5 || r.err != nil {
				t.Fatalf("code %d err %v, want 5 and no error: outputs are saved whatever main's exit code", r.code, r.err)
			}
			b, err := os.ReadFile(ParameterPath(r.root, src+"/p.txt"))
			if name == "sidecar" {
				if err == nil {
					t.Errorf("a sidecar's outputs were saved")
				}
				return
			}
			if err != nil || string(b) != "pv\n" {
				t.Errorf("parameter copy = %q, %v", b, err)
			}
			for _, p := range []string{ParameterPath(r.root, vol+"/q.txt"), ParameterPath(r.root, src+"/nope"), ArtifactPath(r.root, vol+"/a"), ArtifactPath(r.root, src+"/none")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s exists: outputs on a volume or missing must not be copied", p)
				}
			}
			f, err := os.Open(ArtifactPath(r.root, src+"/dir"))
			if err != nil {
				t.Fatalf("artifact: %v", err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(zr)
			var names []string
			for {
				h, err := tr.Next()
				if err != nil {
					break
				}
				names = append(names, h.Name)
			}
			if got := strings.Join(names, ","); got != "dir/,dir/sub/,dir/sub/b.txt" {
				t.Errorf("artifact entries %s", got)
			}
		})
	}
}

// startRun runs the wrapper in the background and returns its result channel.
func startRun(t *testing.T, cfg Config) (root string, done <-chan result) {
	t.Helper()
	root = t.TempDir()
	cfg.Root = root
	if cfg.Name == "" {
		cfg.Name = wf.MainContainerName
	}
	if cfg.Template == nil {
		cfg.Template = shTemplate()
	}
	if cfg.Poll == 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	cfg.Env = []string{"PATH=" + os.Getenv("PATH")}
	out := &syncBuffer{}
	cfg.Stdout, cfg.Stderr = out, out
	for i, a := range cfg.Command {
		cfg.Command[i] = strings.ReplaceAll(a, "$ROOT", root)
	}
	ch := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	go func() {
		defer cancel()
		code, err := Run(ctx, cfg, testLog(t))
		ch <- result{root: root, code: code, err: err, stdout: out}
	}()
	return root, ch
}

// waitForFile polls for a file the child writes (the child's own progress
// has no other signal).
func waitForFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
}

func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestSignalFile(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		signals  []string
		wantCode int
	}{
		{name: "TERM trapped", script: `trap 'exit 7' TERM; sleep 1000 & echo $! > $ROOT/gc; touch $ROOT/ready; wait`, signals: []string{"15"}, wantCode: 7},
		{name: "TERM ignored, then KILL", script: `trap '' TERM; sleep 1000 & echo $! > $ROOT/gc; touch $ROOT/ready; while true; do wait; done`, signals: []string{"15", "9"}, wantCode: 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, done := startRun(t, Config{Command: []string{"sh", "-c", tt.script}})
			waitForFile(t, filepath.Join(root, "ready"))
			gcb, _ := os.ReadFile(filepath.Join(root, "gc"))
			gc, _ := strconv.Atoi(strings.TrimSpace(string(gcb)))
			for i, s := range tt.signals {
				if err := os.WriteFile(filepath.Join(root, "ctr/main/signal"), []byte(s), 0o666); err != nil {
					t.Fatal(err)
				}
				if i < len(tt.signals)-1 {
					// The wrapper consumes the file; the child must survive it.
					waitGone(t, filepath.Join(root, "ctr/main/signal"))
					select {
					case r := <-done:
						t.Fatalf("exited (%d) on signal %s, which it ignores", r.code, s)
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
			r := <-done
			if r.code != tt.wantCode || r.err != nil {
				t.Fatalf("code %d err %v, want %d", r.code, r.err, tt.wantCode)
			}
			// The grandchild was in the child's process group: it got the signal too.
			if gc > 1 {
				deadline := time.Now().Add(5 * time.Second)
				for pidAlive(gc) && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if pidAlive(gc) {
					t.Errorf("grandchild %d still alive: the signal did not reach the process group", gc)
					_ = syscall.Kill(gc, syscall.SIGKILL) // this test's own grandchild, by its PID
				}
			}
		})
	}
}

func waitGone(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p); err != nil {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s was never consumed", p)
}

func TestForwardsReceivedSignals(t *testing.T) {
	sigs := make(chan os.Signal, 4)
	root, done := startRun(t, Config{Signals: sigs, Command: []string{"sh", "-c", `trap 'echo usr1 > $ROOT/usr1' USR1; trap 'exit 9' TERM; touch $ROOT/ready; while true; do sleep 1 & wait $!; done`}})
	waitForFile(t, filepath.Join(root, "ready"))
	sigs <- syscall.SIGCHLD // not forwarded (the shell would not mind, but it is noise)
	sigs <- syscall.SIGUSR1
	waitForFile(t, filepath.Join(root, "usr1"))
	sigs <- syscall.SIGTERM
	r := <-done
	if r.code != 9 || r.err != nil {
		t.Fatalf("code %d err %v, want 9 from the TERM trap", r.code, r.err)
	}
}

func TestSignalBeforeStart(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ctr", "main")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "signal"), []byte("15"), 0o666); err != nil {
		t.Fatal(err)
	}
	code, err := Run(context.Background(), Config{Root: root, Name: "main", Template: shTemplate(), Command: []string{"sh", "-c", "touch " + root + "/ran"},
		Env: []string{"PATH=" + os.Getenv("PATH")}, Stdout: io.Discard, Stderr: io.Discard}, testLog(t))
	if code != ExitSignalled || err != nil {
		t.Fatalf("code %d err %v, want 137", code, err)
	}
	if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
		t.Errorf("the command ran although it was stopped before it started")
	}
}

// drive steps clk while the wrapper runs, standing in for time passing.
func drive(clk *clocktesting.FakeClock, step time.Duration) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
				if clk.HasWaiters() {
					clk.Step(step)
				}
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}

func TestDependencies(t *testing.T) {
	tests := []struct {
		name     string
		depCode  string
		wantCode int
		wantErr  string
	}{
		{name: "dependency succeeded", depCode: "0", wantCode: 0},
		{name: "dependency failed", depCode: "2", wantCode: 64, wantErr: `dependency "a" exited with code 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			tmpl := &wf.Template{ContainerSet: &wf.ContainerSetTemplate{Containers: []wf.ContainerNode{
				{Container: corev1.Container{Name: "a", Command: []string{"sh"}}},
				{Container: corev1.Container{Name: "b", Command: []string{"sh"}}, Dependencies: []string{"a"}},
			}}}
			root, done := startRun(t, Config{Name: "b", Template: tmpl, Clock: clk, Command: []string{"sh", "-c", "touch $ROOT/ran"}})
			// b waits: nothing runs until a's exit code exists.
			for !clk.HasWaiters() {
				time.Sleep(time.Millisecond)
			}
			clk.Step(time.Second)
			if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
				t.Fatal("b ran before a exited")
			}
			os.MkdirAll(filepath.Join(root, "ctr", "a"), 0o777)
			// as a's wrapper writes it: whole, under another name, then renamed (b polls it)
			tmp := filepath.Join(root, "ctr", "a", ".exitcode")
			os.WriteFile(tmp, []byte(tt.depCode), 0o644)
			os.Rename(tmp, filepath.Join(root, "ctr", "a", "exitcode"))
			stop := drive(clk, 50*time.Millisecond)
			r := <-done
			stop()
			if r.code != tt.wantCode {
				t.Errorf("code %d (err %v), want %d", r.code, r.err, tt.wantCode)
			}
			if tt.wantErr != "" && (r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr)) {
				t.Errorf("err %v, want %q", r.err, tt.wantErr)
			}
			_, ran := os.Stat(filepath.Join(root, "ran"))
			if (ran == nil) != (tt.wantCode == 0) {
				t.Errorf("ran = %v, want %v", ran == nil, tt.wantCode == 0)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name         string
		retries      *intstr.IntOrString
		failTimes    int
		wantAttempts int
		wantCode     int
	}{
		{name: "no strategy: one attempt", failTimes: 5, wantAttempts: 1, wantCode: 1},
		{name: "retries 0: one attempt", retries: ptr(intstr.FromInt32(0)), failTimes: 5, wantAttempts: 1, wantCode: 1},
		{name: "retries 2, always failing: 3 attempts", retries: ptr(intstr.FromInt32(2)), failTimes: 5, wantAttempts: 3, wantCode: 1},
		{name: "retries 2, succeeds on the second", retries: ptr(intstr.FromString("2")), failTimes: 1, wantAttempts: 2, wantCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			tmpl := &wf.Template{ContainerSet: &wf.ContainerSetTemplate{Containers: []wf.ContainerNode{{Container: corev1.Container{Name: "main", Command: []string{"sh"}}}}}}
			if tt.retries != nil {
				tmpl.ContainerSet.RetryStrategy = &wf.ContainerSetRetryStrategy{Retries: tt.retries, Duration: "10s"}
			}
			script := `echo x >> $ROOT/attempts; n=$(wc -l < $ROOT/attempts); [ $n -gt ` + strconv.Itoa(tt.failTimes) + ` ] && exit 0; exit 1`
			root, done := startRun(t, Config{Template: tmpl, Clock: clk, Command: []string{"sh", "-c", script}})
			stop := drive(clk, 10*time.Second)
			r := <-done
			stop()
			b, _ := os.ReadFile(filepath.Join(root, "attempts"))
			if got := strings.Count(string(b), "x"); got != tt.wantAttempts || r.code != tt.wantCode {
				t.Errorf("attempts %d code %d (err %v), want %d and %d", got, r.code, r.err, tt.wantAttempts, tt.wantCode)
			}
		})
	}
}

func TestNoRetryAfterStop(t *testing.T) {
	tmpl := &wf.Template{ContainerSet: &wf.ContainerSetTemplate{
		Containers:    []wf.ContainerNode{{Container: corev1.Container{Name: "main", Command: []string{"sh"}}}},
		RetryStrategy: &wf.ContainerSetRetryStrategy{Retries: ptr(intstr.FromInt32(3))}}}
	root, done := startRun(t, Config{Template: tmpl, Command: []string{"sh", "-c", `echo x >> $ROOT/attempts; touch $ROOT/ready; while true; do sleep 1 & wait $!; done`}})
	waitForFile(t, filepath.Join(root, "ready"))
	os.WriteFile(filepath.Join(root, "ctr/main/signal"), []byte("15"), 0o666)
	r := <-done
	b, _ := os.ReadFile(filepath.Join(root, "attempts"))
	if n := strings.Count(string(b), "x"); n != 1 || r.code != ExitSignalled {
		t.Errorf("attempts %d code %d; want 1 attempt and 137: a stopped container is not retried", n, r.code)
	}
}

func TestStage(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(t.TempDir(), "argoexec")
	os.WriteFile(self, []byte("binary"), 0o755)
	if err := Stage(dir, self, `{"name":"t"}`); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		content string
		mode    os.FileMode
	}{"argoexec": {"binary", 0o555}, "template": {`{"name":"t"}`, 0o444}} {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		st, _ := os.Stat(p)
		if err != nil || string(b) != want.content || st.Mode().Perm() != want.mode {
			t.Errorf("%s: %q %v mode %v; want %q mode %v", name, b, err, st.Mode().Perm(), want.content, want.mode)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "ctr")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o777 {
		t.Errorf("ctr: %v, %v; want a directory, mode 0777 (containers of other users make theirs in it)", st, err)
	}
	if err := Stage(dir, filepath.Join(dir, "missing"), "{}"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Stage of a missing binary: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

var _ clock.WithTicker = clocktesting.NewFakeClock(time.Time{})
