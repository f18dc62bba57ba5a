package podexec

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrExitNotObserved is wrapped by waitExit errors when the exec session
// ended in a way that says nothing about the container's exit (it could not
// start, the connection broke, the shell exited by itself). The caller falls
// back on the pod status.
var ErrExitNotObserved = errors.New("the exec session ended without showing that the container's processes died")

// waitExitCmd blocks reading a line from stdin, which waitExit never
// writes: it runs until the session is closed (stdin EOF, exit 0/1) or
// until the kernel kills it (exit 128+signal) because the container's PID 1
// exited and took its PID namespace down. `read` is a shell builtin, so the
// session costs one idle shell and no other process.
var waitExitCmd = []string{"sh", "-c", "read -r _"}

// waitExit is the fast path for learning that container has exited: it
// holds an exec session open in the container and returns nil as soon as
// that session is killed by a signal (exit code >= 128; 137 for SIGKILL, seen
// within a second of main's exit), which is what happens when the
// container's PID 1 exits. That is faster than the pod status, which the
// kubelet updates 0.7-0.9 s after the exit.
//
// An exec that the server refuses because the container is no longer
// running (containerNotRunning) is the same news, and the usual one for a
// main that lives a few milliseconds: it has exited before the session
// reaches it, and the status will say so 0.7-0.9 s later.
//
// nil means only "the container's processes appear to have died". It is not
// the exit code and must never be used as one: confirm the exit with the
// pod status before reading the exit code. Any other end of the session is
// an error wrapping ErrExitNotObserved (or ctx.Err()); the caller then relies
// on status alone. Call it only for a container that status shows running,
// and not in a pod with shareProcessNamespace or hostPID (CheckKillable refuses those):
// there, the exec'd shell does not die with the container's process.
func (c *Engine) waitExit(ctx context.Context, container string) error {
	stdin, hold := io.Pipe()
	defer hold.Close() // EOF on the remote stdin ends the shell if we return first
	stderr := newTail()
	err := c.cfg.Exec.Exec(ctx, container, waitExitCmd, stdin, nil, stderr)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: wait for container %q of pod %s to exit: %w", c.cfg.Backend, container, c.cfg.Pod, ctx.Err())
	}
	if containerNotRunning(err) {
		c.cfg.Log.WithField("container", container).WithError(err).Debug("exec into the container refused: it is no longer running")
		return nil
	}
	if code, ok := exitCode(err); ok && code >= 128 {
		c.cfg.Log.WithField("container", container).WithField("code", code).Debug("exec session into the container was killed: its processes died")
		return nil
	}
	if err == nil {
		err = errors.New("exit code 0")
	}
	return fmt.Errorf("%s: wait for container %q of pod %s to exit: %w: %w", c.cfg.Backend, container, c.cfg.Pod, ErrExitNotObserved, withStderr(err, stderr))
}
