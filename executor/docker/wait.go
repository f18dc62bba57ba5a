package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/internal/backoff"
)

// Backoff between lookups while finding a container. Events wake the search
// as soon as a container is created or started; the backoff is the safety
// net for an engine whose events stream fails.
const (
	findBackoffMin = 50 * time.Millisecond
	findBackoffMax = time.Second
)

// killWaitAfterSIGKILL bounds how long Kill waits for a container to stop
// after SIGKILL, which the engine delivers from outside the container.
const killWaitAfterSIGKILL = 10 * time.Second

// GetExitCode implements executor.ContainerRuntimeExecutor.
func (e *Executor) GetExitCode(ctx context.Context, containerName string) (int, error) {
	code, err := e.exitCode(ctx, containerName)
	if err != nil {
		return 0, fmt.Errorf("docker: get exit code of container %s of pod %s: %w", containerName, e.pod(), err)
	}
	return code, nil
}

func (e *Executor) exitCode(ctx context.Context, containerName string) (int, error) {
	c, err := e.lookup(ctx, containerName)
	if err != nil {
		return 0, err
	}
	res, err := e.cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("inspect container %s: %w", shortID(c.ID), err)
	}
	st := res.Container.State
	if st == nil {
		return 0, fmt.Errorf("inspect container %s: the engine returned no state", shortID(c.ID))
	}
	if !terminated(st.Status) {
		return 0, fmt.Errorf("container %s has not terminated: it is %s", shortID(c.ID), st.Status)
	}
	return st.ExitCode, nil
}

// terminated reports whether a container in state s has run and stopped.
func terminated(s container.ContainerState) bool {
	return s == container.StateExited || s == container.StateDead
}

// Wait implements executor.ContainerRuntimeExecutor. For each container it
// first finds it, started: it may not exist yet, or be only created. Finding
// is bounded by Config.FindTimeout and woken by the engine's events. Then it
// blocks in the engine's wait API (condition not-running) until the container
// stops, so it learns of the exit as the engine does, without polling.
func (e *Executor) Wait(ctx context.Context, containerNames []string) error {
	for _, name := range containerNames {
		if err := e.waitOne(ctx, name); err != nil {
			return fmt.Errorf("docker: wait for container %s of pod %s: %w", name, e.pod(), err)
		}
	}
	return nil
}

func (e *Executor) waitOne(ctx context.Context, name string) error {
	c, err := e.findStarted(ctx, name)
	if err != nil {
		return err
	}
	if terminated(c.State) {
		return nil
	}
	log := e.log.WithFields(logrus.Fields{"container": name, "id": shortID(c.ID)})
	log.Debug("waiting for container to stop")
	code, err := e.waitCrossChecked(ctx, name, c.ID)
	if err != nil {
		return err
	}
	log.WithField("exitCode", code).Debug("container stopped")
	return nil
}

// engineMissedExit is the error of a Wait that the pod's status ended: the
// kubelet reported the container terminated and the engine still showed it
// running Config.StatusBound later.
type engineMissedExit struct {
	name, id string
	term     *corev1.ContainerStateTerminated
	bound    time.Duration
}

func (m *engineMissedExit) Error() string {
	return fmt.Sprintf("the pod's status (the kubelet) says container %s terminated (exit code %d, reason %q, finished %s) "+
		"but the Docker Engine still shows container %s running %s later: dockerd may have missed the exit; "+
		"check the container with `docker inspect %s` on the node and restart dockerd if its process is gone",
		m.name, m.term.ExitCode, m.term.Reason, m.term.FinishedAt.UTC().Format(time.RFC3339), shortID(m.id), m.bound, shortID(m.id))
}

// waitCrossChecked is waitNotRunning, cross-checked with the pod's status
// when Config.PodStatus is set: once the status says the container
// terminated, the engine has Config.StatusBound to agree, after which the
// wait ends with an engineMissedExit error naming both. A status that
// cannot be read is logged and read again at the next poll: the engine
// alone still decides then.
func (e *Executor) waitCrossChecked(ctx context.Context, name, id string) (int64, error) {
	if e.cfg.PodStatus == nil {
		return e.waitNotRunning(ctx, id)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Go(func() { e.watchStatus(ctx, name, id, cancel) })
	code, err := e.waitNotRunning(ctx, id)
	var missed *engineMissedExit
	if err != nil && errors.As(context.Cause(ctx), &missed) {
		err = missed
	}
	cancel(nil)
	wg.Wait()
	return code, err
}

// watchStatus polls the pod's status until ctx ends; when the status has
// shown container name terminated for Config.StatusBound, it cancels ctx
// with an engineMissedExit.
func (e *Executor) watchStatus(ctx context.Context, name, id string, cancel context.CancelCauseFunc) {
	clk := e.cfg.Clock
	ticker := clk.NewTicker(e.cfg.StatusPoll)
	defer ticker.Stop()
	var since time.Time // when the status was first seen to say terminated
	for {
		pod, err := e.cfg.PodStatus(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				e.log.WithError(err).WithField("container", name).Debug("read the pod's status to cross-check the engine's wait; trying again at the next poll")
			}
		default:
			if term := terminatedIn(pod, name, id); term != nil {
				if since.IsZero() {
					since = clk.Now()
					e.log.WithFields(logrus.Fields{"container": name, "id": shortID(id), "bound": e.cfg.StatusBound}).
						Info("the pod's status says the container terminated; waiting for the engine to agree")
				}
				if d := clk.Since(since); d >= e.cfg.StatusBound {
					cancel(&engineMissedExit{name: name, id: id, term: term, bound: d})
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// terminatedIn returns the terminated state pod's status shows for
// container name, when it is the container id (or the status names no
// container ID); nil otherwise.
func terminatedIn(pod *corev1.Pod, name, id string) *corev1.ContainerStateTerminated {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			if st.Name != name || st.State.Terminated == nil {
				continue
			}
			if cid := st.ContainerID; cid != "" && !strings.HasSuffix(cid, "://"+id) {
				continue // another attempt, or another runtime's ID
			}
			return st.State.Terminated
		}
	}
	return nil
}

// waitNotRunning blocks in the engine's wait API until the container is not
// running and returns its exit code.
func (e *Executor) waitNotRunning(ctx context.Context, id string) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := e.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case res := <-w.Result:
		if res.Error != nil && res.Error.Message != "" {
			return res.StatusCode, fmt.Errorf("wait API on container %s: %s", shortID(id), res.Error.Message)
		}
		return res.StatusCode, nil
	case err := <-w.Error:
		if ctxErr := ctx.Err(); ctxErr != nil {
			return 0, fmt.Errorf("wait API on container %s: %w", shortID(id), ctxErr)
		}
		return 0, fmt.Errorf("wait API on container %s: %w", shortID(id), err)
	case <-ctx.Done():
		return 0, fmt.Errorf("wait API on container %s: %w", shortID(id), ctx.Err())
	}
}

// findStarted returns the newest attempt of the named container once it
// exists and is past "created" (running, or already stopped). It gives up
// after Config.FindTimeout with an error naming the labels searched.
func (e *Executor) findStarted(ctx context.Context, name string) (container.Summary, error) {
	findCtx, cancel := context.WithTimeout(ctx, e.cfg.FindTimeout)
	defer cancel()

	var (
		subscribed bool
		evMsgs     <-chan events.Message // nil (blocking) until subscribed
		evErrs     <-chan error
		last       container.Summary
		lastErr    error
	)
	delays := backoff.Exponential(clock.RealClock{}, findBackoffMin, findBackoffMax)
	for {
		c, err := e.lookup(findCtx, name)
		switch {
		case err == nil && c.State != container.StateCreated:
			return c, nil
		case err == nil:
			last, lastErr = c, nil
		case errors.Is(err, ErrContainerNotFound):
			lastErr = err
		case findCtx.Err() == nil:
			return container.Summary{}, err
		}
		if findCtx.Err() != nil {
			return container.Summary{}, e.findTimedOut(ctx, name, last, lastErr)
		}
		if !subscribed {
			// Subscribe, then look again at once: a container created
			// between the lookup and the subscription is not missed.
			subscribed = true
			evMsgs, evErrs = e.subscribe(findCtx, name)
			continue
		}
		timer := delays.Timer()
		select {
		case <-evMsgs:
		case err := <-evErrs:
			if findCtx.Err() == nil {
				e.log.WithError(err).Debug("events stream ended; finding by backoff alone")
			}
			evMsgs, evErrs = nil, nil
		case <-timer.C():
		case <-findCtx.Done():
		}
		timer.Stop()
	}
}

func (e *Executor) findTimedOut(ctx context.Context, name string, last container.Summary, lastErr error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("find container: %w", err)
	}
	if lastErr == nil {
		return fmt.Errorf("container %s (labelled %s) was created but did not start within %s", shortID(last.ID), strings.Join(e.containerLabels(name), ","), e.cfg.FindTimeout)
	}
	return fmt.Errorf("not found within %s: %w", e.cfg.FindTimeout, lastErr)
}

// subscribe asks the engine for create and start events of the named
// container.
func (e *Executor) subscribe(ctx context.Context, name string) (<-chan events.Message, <-chan error) {
	f := client.Filters{}
	f.Add("type", string(events.ContainerEventType))
	f.Add("event", string(events.ActionCreate), string(events.ActionStart))
	f.Add("label", e.containerLabels(name)...)
	res := e.cli.Events(ctx, client.EventsListOptions{Filters: f})
	return res.Messages, res.Err
}

// Kill implements executor.ContainerRuntimeExecutor. It signals through the
// engine, from outside the container: SIGTERM, then, if the container is
// still running after grace, SIGKILL, which works on any image (no shell
// needed) and on a PID 1 that ignores SIGTERM. Containers are killed in
// parallel; containers not running are skipped.
func (e *Executor) Kill(ctx context.Context, containerNames []string, grace time.Duration) error {
	errs := make([]error, len(containerNames))
	var wg sync.WaitGroup
	for i, name := range containerNames {
		wg.Go(func() {
			if err := e.killOne(ctx, name, grace); err != nil {
				errs[i] = fmt.Errorf("docker: kill container %s of pod %s: %w", name, e.pod(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (e *Executor) killOne(ctx context.Context, name string, grace time.Duration) error {
	c, err := e.lookup(ctx, name)
	if err != nil {
		return err
	}
	log := e.log.WithFields(logrus.Fields{"container": name, "id": shortID(c.ID)})
	if c.State != container.StateRunning && c.State != container.StatePaused && c.State != container.StateRestarting {
		log.WithField("state", c.State).Debug("not running: nothing to kill")
		return nil
	}
	log.WithField("grace", grace).Info("sending SIGTERM")
	if stopped, err := e.signal(ctx, c.ID, "SIGTERM"); err != nil || stopped {
		return err
	}
	graceCtx, cancel := context.WithTimeout(ctx, grace)
	_, err = e.waitNotRunning(graceCtx, c.ID)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("wait for container %s to stop after SIGTERM: %w", shortID(c.ID), ctx.Err())
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	log.WithField("grace", grace).Warn("still running after SIGTERM and grace: sending SIGKILL")
	if stopped, err := e.signal(ctx, c.ID, "SIGKILL"); err != nil || stopped {
		return err
	}
	killCtx, cancel := context.WithTimeout(ctx, killWaitAfterSIGKILL)
	defer cancel()
	if _, err := e.waitNotRunning(killCtx, c.ID); err != nil {
		return fmt.Errorf("container %s still running %s after SIGKILL: %w", shortID(c.ID), killWaitAfterSIGKILL, err)
	}
	return nil
}

// signal sends sig through the engine; stopped reports that the container
// had already stopped (the engine answers 409).
func (e *Executor) signal(ctx context.Context, id, sig string) (stopped bool, _ error) {
	_, err := e.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: sig})
	switch {
	case err == nil:
		return false, nil
	case isConflict(err):
		return true, nil
	default:
		return false, fmt.Errorf("send %s to container %s: %w", sig, shortID(id), err)
	}
}
