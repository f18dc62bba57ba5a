package podexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
)

// Shell commands Kill runs in a container. Both use the shell's kill builtin,
// so a container needs `sh` and nothing else.
var (
	termPID1 = []string{"sh", "-c", "kill -s TERM 1"}
	// kill -1 signals every process the caller may signal except PID 1 and
	// itself; "no such process" is not an error here.
	killOthers = []string{"sh", "-c", "kill -s KILL -1 2>/dev/null; true"}
)

// CheckKillable refuses pods where exec-based Kill would signal the wrong
// process: with shareProcessNamespace or hostPID, PID 1 as seen from inside
// a container is the pod's pause process or the node's init, not the
// container's own process.
func CheckKillable(backend string, spec *corev1.PodSpec) error {
	switch {
	case spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace:
		return executor.NotSupported(backend, "kill in a pod with shareProcessNamespace: true",
			"PID 1 in its containers is the pod's pause process; use native sidecars, which the kubelet stops, or the docker backend")
	case spec.HostPID:
		return executor.NotSupported(backend, "kill in a pod with hostPID: true",
			"PID 1 in its containers is the node's init; use native sidecars, which the kubelet stops, or the docker backend")
	}
	return nil
}

// Kill stops the named containers with signals sent from inside them:
//
//  1. each container that Status says is running gets `kill -s TERM 1`
//     (containers already terminated are skipped);
//  2. Kill waits up to grace for Status to show them terminated (a watch or
//     poll in the StatusWatcher, no sleeping here);
//  3. in each container still running, every process but PID 1 gets SIGKILL
//     (`kill -s KILL -1`): the kernel drops a SIGKILL sent to a PID
//     namespace's init from inside that namespace, so PID 1 itself cannot be
//     forced;
//  4. after KillSettle, a container whose PID 1 still runs is an error
//     wrapping executor.ErrPID1Survived that names it.
//
// A container where the signal cannot be sent (no `sh`, or the exec refused)
// is an error naming it and saying what can stop it instead. The backend
// must have called CheckKillable on the pod first. Errors for several
// containers are joined.
func (c *Client) Kill(ctx context.Context, containers []string, grace time.Duration) error {
	running, err := c.Status.Running(ctx, containers)
	if err != nil {
		return fmt.Errorf("%s: kill containers %v of pod %s: %w", c.Backend, containers, c.Pod, err)
	}
	var errs []error
	var signalled []string
	for _, name := range running {
		stopped, err := c.signal(ctx, name, termPID1)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !stopped:
			signalled = append(signalled, name)
		}
	}
	if len(signalled) == 0 {
		return errors.Join(errs...)
	}
	c.Log.WithField("containers", signalled).WithField("grace", grace).Info("sent SIGTERM to PID 1, waiting for the containers to stop")

	if done, err := c.waitTerminated(ctx, signalled, grace); err != nil || done {
		return errors.Join(append(errs, err)...)
	}
	still, err := c.Status.Running(ctx, signalled)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("%s: kill containers %v of pod %s: %w", c.Backend, signalled, c.Pod, err))...)
	}
	if len(still) == 0 {
		return errors.Join(errs...)
	}
	c.Log.WithField("containers", still).Warn("still running after the grace period, sending SIGKILL to every process but PID 1")
	var killed []string
	for _, name := range still {
		stopped, err := c.signal(ctx, name, killOthers)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !stopped:
			killed = append(killed, name)
		}
	}
	if len(killed) == 0 {
		return errors.Join(errs...)
	}
	if done, err := c.waitTerminated(ctx, killed, c.settle()); err != nil || done {
		return errors.Join(append(errs, err)...)
	}
	survivors, err := c.Status.Running(ctx, killed)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("%s: kill containers %v of pod %s: %w", c.Backend, killed, c.Pod, err))...)
	}
	for _, name := range survivors {
		errs = append(errs, fmt.Errorf("%s: kill container %q of pod %s: %w (still running %v after SIGTERM); "+
			"make it a native sidecar (an init container with restartPolicy: Always), which the kubelet stops from outside, or use the docker backend",
			c.Backend, name, c.Pod, executor.ErrPID1Survived, grace))
	}
	return errors.Join(errs...)
}

// waitTerminated waits up to d for containers to terminate. It returns
// done=true when they did, and an error only when ctx itself ended or the
// status could not be read for a reason other than the timeout.
func (c *Client) waitTerminated(ctx context.Context, containers []string, d time.Duration) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := c.Status.WaitTerminated(wctx, containers)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, fmt.Errorf("%s: kill containers %v of pod %s: %w", c.Backend, containers, c.Pod, ctx.Err())
	case wctx.Err() != nil:
		return false, nil // the time is up: go on to the next step
	default:
		return false, fmt.Errorf("%s: kill containers %v of pod %s: wait for them to stop: %w", c.Backend, containers, c.Pod, err)
	}
}

// signal runs a kill command in container. If the exec fails it asks Status
// whether the container stopped meanwhile (then stopped is true and the
// failure does not matter); otherwise the failure is an error naming the
// container and what can stop it instead.
func (c *Client) signal(ctx context.Context, container string, cmd []string) (stopped bool, err error) {
	stderr := newTail()
	execErr := c.Exec.Exec(ctx, container, cmd, nil, nil, stderr)
	if execErr == nil {
		return false, nil
	}
	if ctx.Err() != nil {
		return false, fmt.Errorf("%s: signal container %q of pod %s: %w", c.Backend, container, c.Pod, ctx.Err())
	}
	// The exec may have failed because the container died under it (the
	// kill session itself is SIGKILLed, exit 137, when PID 1 exits at once):
	// give the status the time it lags behind before calling it a failure.
	if done, _ := c.waitTerminated(ctx, []string{container}, c.settle()); done {
		return true, nil
	}
	if running, err := c.Status.Running(ctx, []string{container}); err == nil && len(running) == 0 {
		return true, nil
	}
	return false, fmt.Errorf("%s: signal container %q of pod %s with %q: %w; "+
		"a container without a shell cannot be signalled through exec: make it a native sidecar (an init container with restartPolicy: Always), which the kubelet stops, or use the docker backend",
		c.Backend, container, c.Pod, cmd[len(cmd)-1], withStderr(execErr, stderr))
}

// settle is how long status may lag behind a container's death.
func (c *Client) settle() time.Duration {
	if c.KillSettle == 0 {
		return DefaultKillSettle
	}
	return c.KillSettle
}
