// Package emissary is wait's backend for pods whose containers are wrapped
// by `argoexec emissary` (executor/emissary/wrapper): it reaches nothing
// outside the pod, only the files the wrappers and wait share under
// /var/run/argo (Argo v3.3.8's protocol, argo-v3.3-protocol.md §7).
//
// It differs from Argo's own on purpose: main's exit is seen within
// milliseconds (a 10 ms poll of one stat, not 1 s), and Kill escalates to
// SIGKILL after the grace and names every container still alive (Argo's
// never writes 9: it compares context.Canceled and gets DeadlineExceeded).
package emissary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/emissary/wrapper"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/archive"
)

// Defaults of Config.
const (
	// DefaultPoll is how often Wait and Kill look for exit code files.
	DefaultPoll = 10 * time.Millisecond
	// DefaultKillSettle is how long Kill waits for an exit after SIGKILL.
	DefaultKillSettle = 2 * time.Second
)

// Config is what the emissary backend needs.
type Config struct {
	// Root is the shared volume, /var/run/argo in a pod; empty means that.
	Root string
	// Containers are the pod's containers, init containers first, for
	// ListContainerNames; empty lists the containers that started under the
	// wrapper (the directories under Root/ctr), as Argo's emissary does.
	Containers []string
	// Clock paces polling; nil is the real clock.
	Clock clock.WithTicker
	// Poll is the polling period; zero is DefaultPoll.
	Poll time.Duration
	// KillSettle bounds the wait after SIGKILL; zero is DefaultKillSettle.
	KillSettle time.Duration
}

// Executor is the emissary backend.
type Executor struct {
	cfg Config
	log *logrus.Entry
}

var _ executor.ContainerRuntimeExecutor = (*Executor)(nil)

// New returns the emissary backend over cfg.Root, logging through log.
func New(cfg Config, log *logrus.Entry) (*Executor, error) {
	if cfg.Root == "" {
		cfg.Root = wf.VarRunArgoPath
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.KillSettle <= 0 {
		cfg.KillSettle = DefaultKillSettle
	}
	if st, err := os.Stat(cfg.Root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("emissary: %s is not a directory (%v): the pod must share the %s emptyDir with every container", cfg.Root, err, wf.VarRunArgoVolume)
	}
	return &Executor{cfg: cfg, log: log}, nil
}

func (e *Executor) ctrPath(name string, file ...string) string {
	return filepath.Join(append([]string{e.cfg.Root, "ctr", filepath.Base("/" + name)}, file...)...)
}

// GetFileContents implements executor.ContainerRuntimeExecutor: it reads
// the copy the wrapper made of main's output parameter file when main
// exited. Files that are no declared output parameter of main, and any
// file of a container still running, are not there.
func (e *Executor) GetFileContents(ctx context.Context, containerName, path string) (string, error) {
	p := wrapper.ParameterPath(e.cfg.Root, path)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("emissary: container %q: %s: %w (the wrapper copies main's declared output parameters to %s when main exits; it did not exist then)", containerName, path, fs.ErrNotExist, p)
	}
	if err != nil {
		return "", fmt.Errorf("emissary: container %q: read %s: %w", containerName, path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, wf.MaxFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("emissary: container %q: read %s: %w", containerName, path, err)
	}
	if len(b) > wf.MaxFileBytes {
		return "", fmt.Errorf("emissary: container %q: %s is larger than %d bytes; declare it as an output artifact", containerName, path, wf.MaxFileBytes)
	}
	return string(b), nil
}

// CopyFile implements executor.ContainerRuntimeExecutor: it copies the .tgz
// the wrapper wrote of main's output artifact when main exited. The wrapper
// compressed it at the level the template's artifact asks
// (archive.tar.compressionLevel, else the gzip default); compressionLevel
// is not applied again.
func (e *Executor) CopyFile(ctx context.Context, containerName, srcPath, destPath string, compressionLevel int) error {
	p := wrapper.ArtifactPath(e.cfg.Root, srcPath)
	in, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("emissary: container %q: %s: %w (the wrapper archives main's declared output artifacts to %s when main exits; it did not exist then)", containerName, srcPath, fs.ErrNotExist, p)
	}
	if err != nil {
		return fmt.Errorf("emissary: container %q: copy %s: %w", containerName, srcPath, err)
	}
	defer in.Close()
	out, err := os.Create(destPath)
	if err != nil {
		return fmt.Errorf("emissary: container %q: copy %s: %w", containerName, srcPath, err)
	}
	if _, err := io.Copy(out, archive.ContextReader(ctx, in)); err != nil {
		out.Close()
		_ = os.Remove(destPath) // half an archive is no output
		return fmt.Errorf("emissary: container %q: copy %s to %s: %w", containerName, p, destPath, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("emissary: container %q: copy %s to %s: %w", containerName, p, destPath, err)
	}
	return nil
}

// GetOutputStream implements executor.ContainerRuntimeExecutor: stdout
// alone or stdout and stderr, as the wrapper kept them on the shared
// volume. The wrapper keeps them when ARGO_INCLUDE_SCRIPT_OUTPUT is true,
// the logs are archived, or main is a script.
func (e *Executor) GetOutputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error) {
	name := "stdout"
	if combined {
		name = "combined"
	}
	f, err := os.Open(e.ctrPath(containerName, name))
	if err != nil {
		return nil, fmt.Errorf("emissary: container %q: open its %s: %w (the wrapper keeps it only when ARGO_INCLUDE_SCRIPT_OUTPUT is true, logs are archived, or main is a script)", containerName, name, err)
	}
	return f, nil
}

// GetExitCode implements executor.ContainerRuntimeExecutor from
// ctr/NAME/exitcode (64: the wrapper failed; 137: killed by a signal).
func (e *Executor) GetExitCode(ctx context.Context, containerName string) (int, error) {
	code, ok, err := e.exitCode(containerName)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, fmt.Errorf("emissary: container %q is still running (no %s)", containerName, e.ctrPath(containerName, "exitcode"))
	}
	return code, nil
}

func (e *Executor) exitCode(name string) (int, bool, error) {
	p := e.ctrPath(name, "exitcode")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("emissary: container %q: read %s: %w", name, p, err)
	}
	c, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false, fmt.Errorf("emissary: container %q: %s holds %q, not an exit code", name, p, b)
	}
	return c, true, nil
}

// alive lists the named containers without an exit code file.
func (e *Executor) alive(names []string) []string {
	var out []string
	for _, n := range names {
		if _, err := os.Stat(e.ctrPath(n, "exitcode")); err != nil {
			out = append(out, n)
		}
	}
	return out
}

// Wait implements executor.ContainerRuntimeExecutor: it polls for every
// container's exit code file every Poll, and logs each exit code it finds,
// with the signal a code of 128+N names (137, the wrapper's code for a
// command any signal killed, says only that): when the kubelet stops the
// pod, main's wrapper may see SIGTERM and exit before wait is signalled,
// and this line is then what says why main ended.
func (e *Executor) Wait(ctx context.Context, containerNames []string) error {
	if err := e.waitGone(ctx, containerNames); err != nil {
		return fmt.Errorf("emissary: wait for %s: %w", strings.Join(e.alive(containerNames), ", "), err)
	}
	for _, n := range containerNames {
		if code, ok, err := e.exitCode(n); err == nil && ok {
			l := e.log.WithField("container", n).WithField("exitCode", code)
			switch sig := signalOf(code); {
			case code == wrapper.ExitSignalled:
				// Argo's convention: the wrapper writes it for a command any
				// signal killed, and its own log names the signal.
				l = l.WithField("signal", "any (the wrapper's code for a command a signal killed; its log names the signal)")
			case sig != "":
				l = l.WithField("signal", sig)
			}
			l.Info("container exited")
		}
	}
	return nil
}

// signalOf names the signal an exit code of 128+N reports, as a shell
// does, or "" for a code that reports none.
func signalOf(code int) string {
	if code <= 128 || code > 128+64 {
		return ""
	}
	if name := unix.SignalName(syscall.Signal(code - 128)); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(code-128)
}

func (e *Executor) waitGone(ctx context.Context, names []string) error {
	if len(e.alive(names)) == 0 {
		return nil
	}
	t := e.cfg.Clock.NewTicker(e.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C():
			if len(e.alive(names)) == 0 {
				return nil
			}
		}
	}
}

// Kill implements executor.ContainerRuntimeExecutor: it writes 15 to each
// running container's signal file, waits grace for their exit codes, then
// writes 9 and waits KillSettle. The wrapper sends the signal to its
// child's process group; the child is not PID 1, so SIGKILL works. A
// container still without an exit code is an error naming it: one never
// started under the wrapper (not wrapped, or not started yet) cannot be
// stopped this way, and the error says so.
func (e *Executor) Kill(ctx context.Context, containerNames []string, grace time.Duration) error {
	alive := e.alive(containerNames)
	if len(alive) == 0 {
		return nil
	}
	started := map[string]bool{}
	for _, n := range alive {
		_, err := os.Stat(e.ctrPath(n))
		started[n] = err == nil
	}
	if err := e.signal(alive, syscall.SIGTERM); err != nil {
		return err
	}
	e.log.WithField("containers", alive).WithField("grace", grace).Info("sent SIGTERM through the signal files")
	if err := e.waitFor(ctx, alive, grace); err != nil {
		return fmt.Errorf("emissary: kill %s: %w", strings.Join(e.alive(alive), ", "), err)
	}
	alive = e.alive(alive)
	if len(alive) == 0 {
		return nil
	}
	if err := e.signal(alive, syscall.SIGKILL); err != nil {
		return err
	}
	e.log.WithField("containers", alive).Warnf("still running %s after SIGTERM: sent SIGKILL", grace)
	if err := e.waitFor(ctx, alive, e.cfg.KillSettle); err != nil {
		return fmt.Errorf("emissary: kill %s: %w", strings.Join(e.alive(alive), ", "), err)
	}
	var errs []error
	for _, n := range e.alive(alive) {
		why := "its wrapper did not write an exit code"
		if !started[n] {
			why = "it had not started under argoexec emissary (not wrapped, or not started yet), so no wrapper read its signal file"
		}
		errs = append(errs, fmt.Errorf("emissary: container %q still running %s after SIGTERM and %s after SIGKILL: %s", n, grace, e.cfg.KillSettle, why))
	}
	return errors.Join(errs...)
}

// waitFor waits up to d for names to exit; only ctx's end is an error.
func (e *Executor) waitFor(ctx context.Context, names []string, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := e.cfg.Clock.NewTimer(d)
	defer timer.Stop()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.waitGone(wctx, names) }()
	select {
	case err := <-done:
		return err
	case <-timer.C():
		cancel()
		<-done
		return ctx.Err()
	}
}

// signal writes s to each container's signal file, whole (a wrapper
// polling it never reads "1" of "15"), creating ctr/NAME if the container
// has not started, so that its wrapper does not start the command.
func (e *Executor) signal(names []string, s syscall.Signal) error {
	var errs []error
	for _, n := range names {
		dir := e.ctrPath(n)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			errs = append(errs, fmt.Errorf("emissary: signal container %q: %w", n, err))
			continue
		}
		_ = os.Chmod(dir, 0o777)
		p := filepath.Join(dir, "signal")
		tmp := p + ".wait"
		err := os.WriteFile(tmp, []byte(strconv.Itoa(int(s))), 0o666)
		if err == nil {
			_ = os.Chmod(tmp, 0o666)
			err = os.Rename(tmp, p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("emissary: signal container %q: write %s: %w", n, p, err))
		}
	}
	return errors.Join(errs...)
}

// ListContainerNames implements executor.ContainerRuntimeExecutor: the
// pod's containers from Config, else those that started under the wrapper.
func (e *Executor) ListContainerNames(ctx context.Context) ([]string, error) {
	if len(e.cfg.Containers) > 0 {
		return slices.Clone(e.cfg.Containers), nil
	}
	entries, err := os.ReadDir(filepath.Join(e.cfg.Root, "ctr"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("emissary: list containers: %w", err)
	}
	var names []string
	for _, d := range entries {
		if d.IsDir() {
			names = append(names, d.Name())
		}
	}
	return names, nil
}
