// Package wrapper is `argoexec emissary -- CMD ARGS...`: it runs a user
// container's command as its child, in the child's own process group, and
// speaks Argo Workflows v3.3.8's emissary protocol with wait over the shared
// volume /var/run/argo (argo-v3.3-protocol.md §7):
//
//	ctr/NAME/            created at start, mode 0777 ("started")
//	ctr/NAME/stdout      stdout of the child, appended, mode 0666 (when captured)
//	ctr/NAME/combined    stdout and stderr of the child, mode 0666 (when captured)
//	ctr/NAME/signal      written by wait: a decimal signal number, sent to the child's group
//	ctr/NAME/exitcode    the exit code, written last, mode 0644; 64 = the wrapper failed
//	outputs/parameters/P main's output parameter files not on a user volume
//	outputs/artifacts/P.tgz main's output artifacts not on a user volume
//
// It runs in arbitrary user images as PID 1, so it is small: it imports no
// Kubernetes client. Where it differs from v3.3.8 it is on purpose: signals
// go to the child's process group (v3.3.10's fix; v3.3.8 sent them to
// kill(-1)), files wait reads are written whole (temporary file and rename,
// so wait never reads "1" of a "15" being written), the signal file is polled
// every 50 ms instead of 2 s, a stopped child is not retried, and
// containerSet retries mean retries (attempts = retries + 1; v3.3.8 makes
// `retries: N` N attempts and `retries: 0` none at all).
package wrapper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/internal/backoff"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Exit codes the wrapper itself gives, as Argo's emissary does.
const (
	// ExitWrapperFailed is the exit code when the wrapper could not run the
	// command or save its outputs (Argo's 64).
	ExitWrapperFailed = 64
	// ExitSignalled is the exit code when the child was killed by a signal
	// (Argo's 137, whatever the signal).
	ExitSignalled = 137
)

// DefaultPoll is how often the wrapper looks for a signal file, a
// dependency's exit code and the debug-pause files.
const DefaultPoll = 50 * time.Millisecond

// Config is what one run of the wrapper needs; Run reads nothing else.
type Config struct {
	// Root is the shared volume, /var/run/argo in a pod.
	Root string
	// Name is this container's name (ARGO_CONTAINER_NAME).
	Name string
	// Command is CMD ARGS..., as given after `--`.
	Command []string
	// Template is the template; nil reads Root/template, as Argo's emissary does.
	Template *wf.Template
	// IncludeScriptOutput is ARGO_INCLUDE_SCRIPT_OUTPUT == "true": capture
	// stdout for the script result.
	IncludeScriptOutput bool
	// DebugPauseBefore and DebugPauseAfter are ARGO_DEBUG_PAUSE_BEFORE and
	// _AFTER being set: wait for ctr/NAME/before (or after) to exist.
	DebugPauseBefore, DebugPauseAfter bool
	// Env is the child's environment (os.Environ() in a pod).
	Env []string
	// Stdout and Stderr are the container's own streams.
	Stdout, Stderr io.Writer
	// Signals are the signals the wrapper received; each is forwarded to the
	// child's process group (SIGCHLD, SIGURG and SIGPIPE are not).
	Signals <-chan os.Signal
	// Clock paces polling and retries; nil is the real clock.
	Clock clock.WithTicker
	// Poll is the polling period; zero is DefaultPoll.
	Poll time.Duration
}

// Run runs the command under the protocol and returns the exit code the
// wrapper must exit with; it has then written ctr/NAME/exitcode with the
// same code, after main's outputs. The error says why the code is
// ExitWrapperFailed (or why the exit code file could not be written); the
// child's own failure is no error, only its code.
//
// ctx bounds only the waits before the child starts; once it runs, ending
// ctx SIGKILLs its group (argoexec's command passes a ctx that signals do
// not end: they are forwarded instead).
func Run(ctx context.Context, cfg Config, log *logrus.Entry) (code int, err error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Name == "" {
		return ExitWrapperFailed, errors.New("emissary: no container name: ARGO_CONTAINER_NAME is not set (Argo's controller sets it on every container)")
	}
	dir := filepath.Join(cfg.Root, "ctr", cfg.Name)
	code = ExitWrapperFailed
	defer func() {
		if werr := writeFileAtomic(filepath.Join(dir, "exitcode"), []byte(strconv.Itoa(code)), 0o644); werr != nil {
			err = errors.Join(err, fmt.Errorf("emissary: write exit code %d of container %q: %w", code, cfg.Name, werr))
			code = ExitWrapperFailed
		}
	}()
	// rwxrwxrwx: wait may run as another user and writes the signal file here.
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return code, fmt.Errorf("emissary: create %s: %w", dir, err)
	}
	_ = os.Chmod(dir, 0o777)
	w := &run{cfg: cfg, dir: dir, log: log}
	c, err := w.run(ctx)
	if err != nil {
		return code, fmt.Errorf("emissary: container %q: %w", cfg.Name, err)
	}
	code = c
	if cfg.Name == wf.MainContainerName {
		if err := saveOutputs(ctx, cfg.Root, w.tmpl, log); err != nil {
			code = ExitWrapperFailed
			return code, fmt.Errorf("emissary: save outputs of container %q: %w", cfg.Name, err)
		}
	}
	return code, nil
}

type run struct {
	cfg  Config
	dir  string
	log  *logrus.Entry
	tmpl *wf.Template
	// stopped is set once a stop signal reached the child: no more attempts.
	stopped bool
}

func (w *run) run(ctx context.Context) (int, error) {
	tmpl := w.cfg.Template
	if tmpl == nil {
		p := filepath.Join(w.cfg.Root, "template")
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, fmt.Errorf("read the template: %w (argoexec init writes it; is this pod's executor emissary?)", err)
		}
		if tmpl, err = wf.DecodeTemplate(b); err != nil {
			return 0, fmt.Errorf("decode the template %s: %w", p, err)
		}
	}
	w.tmpl = tmpl
	if err := checkCommand(w.cfg.Name, w.cfg.Command, tmpl); err != nil {
		return 0, err
	}
	if err := w.waitDependencies(ctx); err != nil {
		return 0, err
	}
	path, err := lookPath(w.cfg.Command[0], w.cfg.Env)
	if err != nil {
		return 0, err
	}
	if w.cfg.DebugPauseBefore {
		if err := w.waitFile(ctx, filepath.Join(w.dir, "before"), "ARGO_DEBUG_PAUSE_BEFORE"); err != nil {
			return 0, err
		}
	}
	attempts, delay, err := retries(tmpl)
	if err != nil {
		return 0, err
	}
	code := 0
	for i := range attempts {
		if i > 0 {
			w.log.WithField("attempt", i+1).WithField("exitCode", code).Infof("retrying after %s", delay)
			if err := backoff.Sleep(ctx, w.cfg.Clock, delay); err != nil {
				return 0, fmt.Errorf("wait to retry: %w", err)
			}
		}
		if code, err = w.attempt(ctx, path); err != nil {
			return 0, err
		}
		if code == 0 || w.stopped {
			break
		}
	}
	if w.cfg.DebugPauseAfter {
		if err := w.waitFile(ctx, filepath.Join(w.dir, "after"), "ARGO_DEBUG_PAUSE_AFTER"); err != nil {
			return 0, err
		}
	}
	return code, nil
}

// checkCommand refuses an empty command and says what is missing when the
// template's container has no command and its args arrived alone.
func checkCommand(name string, command []string, tmpl *wf.Template) error {
	c := templateContainer(tmpl, name)
	noCommand := c != nil && len(c.Command) == 0
	switch {
	case len(command) == 0 && noCommand:
		return fmt.Errorf("nothing to run after `--`: the template gives container %q no command; Argo's controller takes it from the `images` key of its ConfigMap (images[%q].command), add the image there or set command", name, c.Image)
	case len(command) == 0:
		return errors.New("nothing to run: usage is `argoexec emissary -- CMD ARGS...`")
	case noCommand && len(c.Args) > 0 && strings.Join(command, "\x00") == strings.Join(c.Args, "\x00"):
		return fmt.Errorf("container %q has no command, only args %q: the image's entrypoint is missing; Argo's controller takes it from the `images` key of its ConfigMap (images[%q].command): add the image there or set command", name, c.Args, c.Image)
	}
	return nil
}

// templateContainer is the template's spec of the named container, or nil.
func templateContainer(t *wf.Template, name string) *struct {
	Image         string
	Command, Args []string
} {
	type spec = struct {
		Image         string
		Command, Args []string
	}
	switch {
	case t.ContainerSet != nil:
		for _, n := range t.ContainerSet.Containers {
			if n.Name == name {
				return &spec{n.Image, n.Command, n.Args}
			}
		}
	case name != wf.MainContainerName:
		for _, s := range t.Sidecars {
			if s.Name == name {
				return &spec{s.Image, s.Command, s.Args}
			}
		}
	case t.Container != nil:
		return &spec{t.Container.Image, t.Container.Command, t.Container.Args}
	case t.Script != nil:
		return &spec{t.Script.Image, t.Script.Command, t.Script.Args}
	}
	return nil
}

func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("find command %q: %w", name, err)
		}
		return name, nil
	}
	pathEnv := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("find command %q in PATH %q: %w", name, pathEnv, exec.ErrNotFound)
}

// retries is containerSet.retryStrategy as attempts and the constant delay
// between them.
func retries(t *wf.Template) (int, time.Duration, error) {
	if t.ContainerSet == nil || t.ContainerSet.RetryStrategy == nil || t.ContainerSet.RetryStrategy.Retries == nil {
		return 1, 0, nil
	}
	rs := t.ContainerSet.RetryStrategy
	n := rs.Retries.IntValue()
	if n < 0 {
		return 0, 0, fmt.Errorf("containerSet.retryStrategy.retries is %s: want 0 or more", rs.Retries.String())
	}
	var d time.Duration
	if rs.Duration != "" {
		var err error
		if d, err = time.ParseDuration(rs.Duration); err != nil || d < 0 {
			return 0, 0, fmt.Errorf("containerSet.retryStrategy.duration %q: want a positive duration such as 1s", rs.Duration)
		}
	}
	return n + 1, d, nil
}

// waitDependencies waits for the exit code of each containerSet dependency
// of this container; one that is not 0 is an error.
func (w *run) waitDependencies(ctx context.Context) error {
	if w.tmpl.ContainerSet == nil {
		return nil
	}
	for _, n := range w.tmpl.ContainerSet.Containers {
		if n.Name != w.cfg.Name {
			continue
		}
		for _, d := range n.Dependencies {
			w.log.WithField("dependency", d).Info("waiting for dependency")
			p := filepath.Join(w.cfg.Root, "ctr", d, "exitcode")
			for {
				b, err := os.ReadFile(p)
				if err == nil {
					c, err := strconv.Atoi(strings.TrimSpace(string(b)))
					if err != nil {
						return fmt.Errorf("dependency %q: exit code file %s holds %q: %w", d, p, b, err)
					}
					if c != 0 {
						return fmt.Errorf("dependency %q exited with code %d", d, c)
					}
					break
				}
				if !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("dependency %q: %w", d, err)
				}
				if err := backoff.Sleep(ctx, w.cfg.Clock, w.cfg.Poll); err != nil {
					return fmt.Errorf("wait for dependency %q: %w", d, err)
				}
			}
		}
	}
	return nil
}

func (w *run) waitFile(ctx context.Context, p, why string) error {
	w.log.Infof("%s is set: waiting for %s to exist", why, p)
	for {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
		if err := backoff.Sleep(ctx, w.cfg.Clock, w.cfg.Poll); err != nil {
			return fmt.Errorf("%s: wait for %s: %w", why, p, err)
		}
	}
}

// capture says whether the child's streams are kept in ctr/NAME/{stdout,combined}:
// when wait needs them for the result or the log artifact (as Argo), and for
// script templates (our controller's result default).
func (w *run) capture() bool {
	t := w.tmpl
	archiveLogs := t.ArchiveLocation != nil && t.ArchiveLocation.ArchiveLogs != nil && *t.ArchiveLocation.ArchiveLogs
	return w.cfg.IncludeScriptOutput || archiveLogs || (t.Script != nil && w.cfg.Name == wf.MainContainerName)
}

// attempt runs the child once and returns its exit code.
func (w *run) attempt(ctx context.Context, path string) (int, error) {
	if s := w.takeSignal(); s != 0 && isStop(s) {
		w.stopped = true
		w.log.WithField("signal", int(s)).Info("stopped before the command started")
		return ExitSignalled, nil
	}
	cmd := &exec.Cmd{Path: path, Args: w.cfg.Command, Env: w.cfg.Env, Stdout: w.cfg.Stdout, Stderr: w.cfg.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}, WaitDelay: time.Second}
	if w.capture() {
		stdout, err := os.OpenFile(filepath.Join(w.dir, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			return 0, fmt.Errorf("open stdout capture: %w", err)
		}
		defer stdout.Close()
		combined, err := os.OpenFile(filepath.Join(w.dir, "combined"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			return 0, fmt.Errorf("open combined capture: %w", err)
		}
		defer combined.Close()
		_ = os.Chmod(stdout.Name(), 0o666)
		_ = os.Chmod(combined.Name(), 0o666)
		cmd.Stdout = io.MultiWriter(w.cfg.Stdout, stdout, combined)
		cmd.Stderr = io.MultiWriter(w.cfg.Stderr, combined)
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %q: %w", path, err)
	}
	g := &group{pgid: cmd.Process.Pid}
	exited := make(chan struct{})
	go func() {
		// Wait for the exit without reaping: while the zombie holds the
		// PID, the process group cannot be reused by another process, so a
		// signal sent under g.mu reaches only what the child started.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, g.pgid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		g.markExited()
		close(exited)
	}()
	var fwd sync.WaitGroup
	stopFwd := make(chan struct{})
	fwd.Go(func() { w.forward(ctx, g, stopFwd) })
	<-exited
	close(stopFwd)
	fwd.Wait()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), nil
	case errors.As(err, &ee):
		w.log.WithField("signal", ee.String()).Info("the command was killed by a signal")
		return ExitSignalled, nil
	case errors.Is(err, exec.ErrWaitDelay):
		// The child exited; a process it left behind holds its output open.
		w.log.Warn("the command exited but a process it started still holds its output open; not waiting for it")
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() >= 0 {
			return cmd.ProcessState.ExitCode(), nil
		}
		return ExitSignalled, nil
	default:
		return 0, fmt.Errorf("wait for %q: %w", path, err)
	}
}

// forward sends the child's group the signals the wrapper receives and
// those wait writes to the signal file, until stop is closed; ctx ending
// SIGKILLs the group.
func (w *run) forward(ctx context.Context, g *group, stop <-chan struct{}) {
	t := w.cfg.Clock.NewTicker(w.cfg.Poll)
	defer t.Stop()
	done := ctx.Done()
	for {
		select {
		case <-stop:
			return
		case <-done:
			done = nil
			w.stopped = true
			g.signal(syscall.SIGKILL, w.log)
		case s, ok := <-w.cfg.Signals:
			if !ok {
				w.cfg.Signals = nil
				continue
			}
			sig, isSys := s.(syscall.Signal)
			if !isSys || sig == syscall.SIGCHLD || sig == syscall.SIGURG || sig == syscall.SIGPIPE {
				continue
			}
			if isStop(sig) {
				w.stopped = true
			}
			g.signal(sig, w.log)
		case <-t.C():
			if s := w.takeSignal(); s != 0 {
				if isStop(s) {
					w.stopped = true
				}
				w.log.WithField("signal", int(s)).Info("signal file: signalling the command's process group")
				g.signal(s, w.log)
			}
		}
	}
}

// takeSignal reads and removes ctr/NAME/signal; 0 when there is none.
func (w *run) takeSignal() syscall.Signal {
	p := filepath.Join(w.dir, "signal")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	_ = os.Remove(p)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 || n > 64 {
		w.log.Warnf("signal file %s holds %q, not a signal number: ignored", p, b)
		return 0
	}
	return syscall.Signal(n)
}

func isStop(s syscall.Signal) bool {
	switch s {
	case syscall.SIGTERM, syscall.SIGKILL, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP:
		return true
	}
	return false
}

// group is the child's process group, signalled only while the child has
// not been reaped.
type group struct {
	mu     sync.Mutex
	pgid   int
	exited bool
}

func (g *group) markExited() {
	g.mu.Lock()
	g.exited = true
	g.mu.Unlock()
}

func (g *group) signal(s syscall.Signal, log *logrus.Entry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.exited || g.pgid <= 1 {
		return
	}
	if err := syscall.Kill(-g.pgid, s); err != nil && err != syscall.ESRCH {
		log.WithError(err).Warnf("signal %d to the command's process group %d", int(s), g.pgid)
	}
}

// writeFileAtomic writes b to p whole: a reader sees the old file, none, or
// all of b.
func writeFileAtomic(p string, b []byte, mode os.FileMode) error {
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
