package podexec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Wait blocks until every named container has terminated, or ctx ends.
//
// Two paths race. The status, followed through the PodSource, shows an exit
// once the kubelet reports it, 0.7-0.9 s after it happens. Beside it, for
// each named container that the status shows running, an exec session into
// the container (waitExit) ends within a second of the container's exit,
// usually well before the status: when it is killed with the container, or
// refused because the container is no longer running (a main of a few
// milliseconds has exited before the session reaches it), Wait counts that
// instance of the container (its container ID) as exited. The
// fast path never supplies the exit code: GetExitCode waits for the status.
// The fast path is skipped with Config.NoExecWait and in pods with
// shareProcessNamespace or hostPID (there the exec'd shell outlives the
// container's process). Every session Wait starts has ended when it returns.
//
// A container name the pod does not have, a pod deleted while waiting, and a
// pod that finished without running a named container are errors.
func (e *Engine) Wait(ctx context.Context, containerNames []string) error {
	op := fmt.Sprintf("wait for containers %v of pod %s", containerNames, e.cfg.Pod)
	if len(containerNames) == 0 {
		return nil
	}
	pod, err := e.cfg.Source.Get(ctx)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", e.cfg.Backend, op, err)
	}
	if err := checkNames(pod, containerNames); err != nil {
		return fmt.Errorf("%s: %s: %w", e.cfg.Backend, op, err)
	}
	r, err := e.until(ctx, pod, containerNames, untilOptions{fast: !e.cfg.NoExecWait})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", e.cfg.Backend, op, err)
	}
	log := e.cfg.Log.WithField("containers", containerNames)
	if r.byExec {
		e.endedByExec.Add(1)
		log.WithField("endedBy", "exec").Info("wait ended: the exec session into each container died with it (the status is not waited for)")
	} else {
		e.endedByStatus.Add(1)
		log.WithField("endedBy", "status").Info("wait ended: the pod status shows each container terminated")
	}
	return nil
}

// WaitPaths says how many Waits have returned because the exec fast path saw
// the last container exit (exec) and how many because the status showed it
// (status). It is for tests that check the fast path fires.
func (e *Engine) WaitPaths() (exec, status int) {
	return int(e.endedByExec.Load()), int(e.endedByStatus.Load())
}

// untilOptions tune until.
type untilOptions struct {
	// fast races exec sessions (waitExit) against the status, and counts
	// an exit that exec saw before as done.
	fast bool
	// urgent is passed on to the PodSource.
	urgent bool
	// deadline, if not nil, ends the wait early: until then returns
	// timedOut and no error.
	deadline <-chan time.Time
}

// untilResult is how until ended.
type untilResult struct {
	// pod is the pod as last seen.
	pod *corev1.Pod
	// byExec: an exec session, not the status, ended the wait.
	byExec bool
	// timedOut: the deadline came first.
	timedOut bool
}

// exitSeen is the end of one exec session of the fast path.
type exitSeen struct {
	container, id string
	err           error
}

// until follows the pod from pod until every named container has
// terminated (with o.fast: or exec saw that instance of it exit), the pod
// finished without one of them, o.deadline passes, or ctx ends. It joins the
// source's goroutine and every exec session it started before it returns.
func (e *Engine) until(ctx context.Context, pod *corev1.Pod, names []string, o untilOptions) (untilResult, error) {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // runs before wg.Wait: ends the source and the sessions

	// The fast path needs the exec'd shell to die with the container's
	// PID 1, which it does only when the container has its own PID namespace.
	fast := o.fast && CheckKillable(e.cfg.Backend, &pod.Spec) == nil
	started := map[string]bool{} // name + "/" + container ID
	exits := make(chan exitSeen)
	startFast := func(p *corev1.Pod) {
		for _, n := range names {
			st, _ := containerStatus(p, n)
			if !fast || st.State.Running == nil || started[n+"/"+st.ContainerID] {
				continue
			}
			started[n+"/"+st.ContainerID] = true
			wg.Go(func() {
				r := exitSeen{container: n, id: st.ContainerID, err: e.waitExit(ctx, n)}
				select {
				case exits <- r:
				case <-ctx.Done():
				}
			})
		}
	}
	done := func(p *corev1.Pod) (bool, error) {
		all := true
		for _, n := range names {
			st, _ := containerStatus(p, n)
			all = all && (st.State.Terminated != nil || (o.fast && e.sawExit(n, st.ContainerID)))
		}
		if all {
			return true, nil
		}
		if err := finishedWithout(p, names); err != nil {
			return false, err
		}
		startFast(p)
		return false, nil
	}
	if ok, err := done(pod); ok || err != nil {
		return untilResult{pod: pod}, err
	}

	// The source's callback hands each pod over and returns only once it
	// has been judged, so that the source does not read the pod again
	// (a /pods poll) after the wait is over.
	pods := make(chan *corev1.Pod)
	judged := make(chan struct{})
	followErr := make(chan error, 1)
	wg.Go(func() {
		followErr <- e.cfg.Source.Follow(ctx, pod, FollowOptions{Urgent: o.urgent}, func(p *corev1.Pod) error {
			select {
			case pods <- p:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case <-judged:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	})
	for {
		select {
		case <-ctx.Done():
			return untilResult{pod: pod}, ctx.Err()
		case <-o.deadline:
			return untilResult{pod: pod, timedOut: true}, nil
		case err := <-followErr:
			if ctx.Err() != nil {
				return untilResult{pod: pod}, ctx.Err()
			}
			return untilResult{pod: pod}, err
		case p := <-pods:
			pod = p
			e.noteExits(pod, names)
			if ok, err := done(pod); ok || err != nil {
				return untilResult{pod: pod}, err
			}
			judged <- struct{}{}
		case r := <-exits:
			log := e.cfg.Log.WithField("container", r.container)
			if r.err != nil {
				if IsForbidden(r.err) {
					// Not silent: Wait still works, later, and the error names the grant.
					log.WithError(r.err).Warn("exec fast path refused, relying on the pod status (main's exit is seen up to a poll or watch event later)")
				} else {
					log.WithError(r.err).Debug("exec fast path unavailable, relying on the pod status")
				}
				continue
			}
			log.Debug("exec session ended with the container: counting it as exited")
			e.markExit(r.container, r.id)
			if ok, err := done(pod); ok || err != nil {
				return untilResult{pod: pod, byExec: ok}, err
			}
		}
	}
}

// GetExitCode returns the exit code of the named container from the pod
// status. A container still running is an error that says so. If Wait's exec
// fast path saw the container exit before the status did, GetExitCode
// follows the status (up to Config.ExitConfirmTimeout) until it confirms the
// exit: the fast path never supplies the code. A container that has been
// restarted since (a native sidecar) gives the code of the instance exec saw
// exit, from its last termination state.
func (e *Engine) GetExitCode(ctx context.Context, containerName string) (int, error) {
	code, err := e.getExitCode(ctx, containerName)
	if err != nil {
		return 0, fmt.Errorf("%s: get exit code of container %q of pod %s: %w", e.cfg.Backend, containerName, e.cfg.Pod, err)
	}
	return code, nil
}

func (e *Engine) getExitCode(ctx context.Context, name string) (int, error) {
	pod, err := e.cfg.Source.Get(ctx)
	if err != nil {
		return 0, err
	}
	st, ok := containerStatus(pod, name)
	if !ok {
		return 0, checkNames(pod, []string{name})
	}
	if t := st.State.Terminated; t != nil {
		return int(t.ExitCode), nil
	}
	id, seen := e.seenExit(name)
	if seen && id == st.ContainerID {
		e.cfg.Log.WithField("container", name).Debug("exit seen by exec, waiting for the pod status to confirm it")
		timer := e.cfg.Clock.NewTimer(e.cfg.ExitConfirmTimeout)
		defer timer.Stop()
		r, err := e.until(ctx, pod, []string{name}, untilOptions{urgent: true, deadline: timer.C()})
		if err != nil && !errors.Is(err, ctx.Err()) {
			e.cfg.Log.WithError(err).WithField("container", name).Debug("following the status to confirm the exit failed")
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		st, _ = containerStatus(r.pod, name)
		if t := st.State.Terminated; t != nil {
			return int(t.ExitCode), nil
		}
		if r.timedOut {
			return 0, fmt.Errorf("its processes died but after %v the status still shows it %s, not terminated", e.cfg.ExitConfirmTimeout, describeState(st.State))
		}
		if err != nil {
			return 0, err
		}
	}
	if t := st.LastTerminationState.Terminated; seen && t != nil && t.ContainerID == id {
		return int(t.ExitCode), nil
	}
	return 0, fmt.Errorf("the container has not terminated (%s)", describeState(st.State))
}

// ListContainerNames lists the pod's containers from its spec: init
// containers (native sidecars among them) first, then the others.
func (e *Engine) ListContainerNames(ctx context.Context) ([]string, error) {
	pod, err := e.cfg.Source.Get(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: list containers of pod %s: %w", e.cfg.Backend, e.cfg.Pod, err)
	}
	return containerNames(pod), nil
}
