package podexec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
)

// Shell commands Kill runs in a container. Both use the shell's kill builtin,
// so a container needs `sh` and nothing else. Neither hides its own failure:
// its exit status and stderr reach the error.
var (
	termPID1 = []string{"sh", "-c", "kill -s TERM 1"}
	// kill -1 signals every process the caller may signal except PID 1 and
	// itself. The spelling matters: dash (Debian's and Ubuntu's /bin/sh)
	// reads the "-1" of "kill -s KILL -1" as an option and refuses it
	// ("Illegal option -1"), and busybox sh refuses "kill -s KILL -- -1"
	// ("invalid number '--'", exit 1, though it signals); "kill -KILL -1"
	// works in dash, busybox sh and bash (TestKillCommandsUnderShells).
	// When there is no other process the builtin fails with "No such
	// process" (ESRCH), which signal treats as nothing left to kill
	// (nothingToKill).
	killOthers = []string{"sh", "-c", "kill -KILL -1"}
)

// nothingToKill says that err is killOthers failing only because no process
// but PID 1 and the shell itself was left: exit status 1 with "No such
// process" (dash: "kill: No such process", busybox: "kill: can't kill pid
// -1: No such process", bash: "kill: (-1) - No such process"). The shell's
// message is the only way to tell ESRCH from other failures.
func nothingToKill(cmd []string, err error) bool {
	var ee *executor.ExitCodeError
	return slices.Equal(cmd, killOthers) && errors.As(err, &ee) && ee.Code == 1 &&
		strings.Contains(strings.ToLower(ee.Stderr), "no such process")
}

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
//  1. it refuses pods where PID 1 is not the container's process
//     (CheckKillable) and names the pod does not have;
//  2. each container that the status shows running, and whose exit exec has
//     not seen, gets `kill -s TERM 1` (containers already terminated are
//     skipped);
//  3. Kill follows the status, racing exec sessions as Wait does, up to
//     grace for them to terminate; those sessions have ended before step 4;
//  4. in each container still running, every process but PID 1 gets SIGKILL
//     (`kill -KILL -1`): the kernel drops a SIGKILL sent to a PID
//     namespace's init from inside that namespace, so PID 1 itself cannot be
//     forced;
//  5. after Config.KillSettle, a container whose PID 1 still runs is an error
//     wrapping executor.ErrPID1Survived that names it.
//
// A container where the signal cannot be sent (no `sh`, or the exec refused)
// is an error naming it and saying what can stop it instead. Errors for
// several containers are joined.
func (c *Engine) Kill(ctx context.Context, containers []string, grace time.Duration) error {
	if len(containers) == 0 {
		return nil
	}
	pod, err := c.cfg.Source.Get(ctx)
	if err != nil {
		return fmt.Errorf("%s: kill containers %v of pod %s: %w", c.cfg.Backend, containers, c.cfg.Pod, err)
	}
	if err := CheckKillable(c.cfg.Backend, &pod.Spec); err != nil {
		return err
	}
	if err := checkNames(pod, containers); err != nil {
		return fmt.Errorf("%s: kill containers %v of pod %s: %w", c.cfg.Backend, containers, c.cfg.Pod, err)
	}
	var errs []error
	var signalled []string
	for _, name := range c.running(pod, containers) {
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
	c.cfg.Log.WithField("containers", signalled).WithField("grace", grace).Info("sent SIGTERM to PID 1, waiting for the containers to stop")

	still, err := c.waitTerminated(ctx, signalled, grace)
	if err != nil || len(still) == 0 {
		return errors.Join(append(errs, err)...)
	}
	c.cfg.Log.WithField("containers", still).Warn("still running after the grace period, sending SIGKILL to every process but PID 1")
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
	survivors, err := c.waitTerminated(ctx, killed, c.cfg.KillSettle)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, name := range survivors {
		errs = append(errs, fmt.Errorf("%s: kill container %q of pod %s: %w (still running %v after SIGTERM); "+
			"make it a native sidecar (an init container with restartPolicy: Always), which the kubelet stops from outside, or use the docker backend",
			c.cfg.Backend, name, c.cfg.Pod, executor.ErrPID1Survived, grace))
	}
	return errors.Join(errs...)
}

// running returns those of containers that pod shows running and whose exit
// exec has not seen.
func (c *Engine) running(pod *corev1.Pod, containers []string) []string {
	var out []string
	for _, n := range containers {
		if st, _ := containerStatus(pod, n); st.State.Running != nil && !c.sawExit(n, st.ContainerID) {
			out = append(out, n)
		}
	}
	return out
}

// waitTerminated waits up to d for containers to terminate and returns
// those still running then. Its exec sessions have ended when it returns,
// so a SIGKILL sent next cannot be mistaken for an exit. It returns an
// error only when ctx ended or the status could not be read.
func (c *Engine) waitTerminated(ctx context.Context, containers []string, d time.Duration) ([]string, error) {
	fail := func(err error) ([]string, error) {
		return nil, fmt.Errorf("%s: kill containers %v of pod %s: wait for them to stop: %w", c.cfg.Backend, containers, c.cfg.Pod, err)
	}
	pod, err := c.cfg.Source.Get(ctx)
	if err != nil {
		return fail(err)
	}
	timer := c.cfg.Clock.NewTimer(d)
	defer timer.Stop()
	r, err := c.until(ctx, pod, containers, untilOptions{fast: !c.cfg.NoExecWait, urgent: true, deadline: timer.C()})
	if err != nil {
		return fail(err)
	}
	if !r.timedOut {
		return nil, nil
	}
	// The deadline passed: ask again, the last version seen may be old.
	if pod, err = c.cfg.Source.Get(ctx); err != nil {
		return fail(err)
	}
	return c.running(pod, containers), nil
}

// signal runs a kill command in container. If the exec fails it asks the
// status whether the container stopped meanwhile (then stopped is true and
// the failure does not matter); otherwise the failure is an error naming the
// container and what can stop it instead.
func (c *Engine) signal(ctx context.Context, container string, cmd []string) (stopped bool, err error) {
	stderr := newTail()
	execErr := withStderr(c.cfg.Exec.Exec(ctx, container, cmd, nil, nil, stderr), stderr)
	if execErr == nil || nothingToKill(cmd, execErr) {
		return false, nil
	}
	if ctx.Err() != nil {
		return false, fmt.Errorf("%s: signal container %q of pod %s: %w", c.cfg.Backend, container, c.cfg.Pod, ctx.Err())
	}
	// The exec may have failed because the container died under it (the
	// kill session itself is SIGKILLed, exit 137, when PID 1 exits at once):
	// give the status the time it lags behind before calling it a failure.
	if still, err := c.waitTerminated(ctx, []string{container}, c.cfg.KillSettle); err == nil && len(still) == 0 {
		return true, nil
	}
	hint := "a container without a shell cannot be signalled through exec"
	if ee := (*executor.ExitCodeError)(nil); errors.As(execErr, &ee) && ee.Code != 126 && ee.Code != 127 && ee.Code < 128 {
		// The shell ran and its kill builtin failed: the command is at
		// fault, not the container's PID 1.
		hint = "the container's shell ran the kill command and it failed (the shell's own message is above); this is a fault of argoexec's kill command, not of the container's process: report it with the image's /bin/sh"
	}
	return false, fmt.Errorf("%s: signal container %q of pod %s with %q: %w; "+
		"%s: make it a native sidecar (an init container with restartPolicy: Always), which the kubelet stops, or use the docker backend",
		c.cfg.Backend, container, c.cfg.Pod, cmd[len(cmd)-1], execErr, hint)
}
