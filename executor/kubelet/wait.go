package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/argoexec/argoexec/executor/internal/podexec"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// maxPollFailures is how many /pods polls in a row may fail with an error
// that could pass (a 5xx, a refused or reset connection) before Wait gives
// up. The interval backs off to PollMax meanwhile, so with the default 1 s
// this rides out about 28 s of a kubelet that does not answer: a kubelet
// restart (an upgrade, a config change) takes a few seconds and leaves the
// containers running, and a step that runs for hours must not fail for it.
const maxPollFailures = 30

// watchResult is how one exec watch ended.
type watchResult struct {
	container   string
	containerID string
	err         error
}

// Wait blocks until every named container has terminated, or ctx ends.
//
// Two sources race, and the first to say "terminated" wins for a container:
//
//   - The fast path: for each named container found running, an exec session
//     into it that does nothing until the container's processes die (when
//     the container's PID 1 exits the kernel kills the rest of its PID
//     namespace, the session with it). It learns of the exit on the node at
//     once, before the kubelet's own status does (the kubelet reports an
//     exit 0.7–0.9 s after it happens: its pod lifecycle relist).
//   - The kubelet's /pods, polled from cfg.PollInitial (100 ms), doubling
//     while nothing changes up to cfg.PollMax (1 s), back to the start when a
//     container's state changes. It is the fallback where the fast path
//     cannot run (no shell in the image, a container not started yet, a
//     token that may not exec) and it gives containers already terminated.
//
// Why not poll alone, as Argo v3.3.8 did: it polled /pods every 5 s and took
// 5.0 s from main's exit to outputs on the measured node, and every poll
// reads the whole node's pod list (766 KB with 55 pods). A short fixed
// interval would pay that cost tens of times a second; the backoff bounds it
// to about one list a second for a long-running step, and the exec watch
// makes the common case fast without polling faster. GetExitCode then
// confirms with the kubelet's status, which is what knows the exit code.
//
// Polls that fail in ways that pass (a 5xx, a refused connection, a
// restarted kubelet that does not list the pod yet) are retried for about
// maxPollFailures seconds; a refused token, a missing RBAC grant or a
// certificate that does not verify end Wait at once.
func (e *Executor) Wait(ctx context.Context, containerNames []string) error {
	if err := e.wait(ctx, containerNames, waitOptions{watch: true, pollMax: e.cfg.PollMax}); err != nil {
		return fmt.Errorf("kubelet: wait for containers %v of pod %s/%s: %w", containerNames, e.cfg.Namespace, e.cfg.PodName, err)
	}
	return nil
}

// waitOptions tune wait for its two users, Wait and Kill.
type waitOptions struct {
	// watch runs the exec watch beside polling.
	watch bool
	// pollMax bounds the poll interval.
	pollMax time.Duration
}

func (e *Executor) wait(ctx context.Context, names []string, opt waitOptions) error {
	if len(names) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the exec watches still running

	var (
		done     = map[string]bool{}
		watching = map[string]bool{}
		exits    = make(chan watchResult, len(names))
		interval = e.cfg.PollInitial
		last     string
		failures int
	)
	allDone := func() bool {
		for _, n := range names {
			if !done[n] {
				return false
			}
		}
		return true
	}
	for {
		pod, err := e.getPod(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			failures++
			if !retryable(err) || failures >= maxPollFailures {
				return err
			}
			e.log.WithError(err).Warnf("kubelet: poll %d/%d of /pods failed; retrying", failures, maxPollFailures)
		default:
			failures = 0
			// The exec watch's shell dies with the container's PID 1 only
			// when the container has its own PID namespace.
			watch := opt.watch && e.watchExit != nil && podexec.CheckKillable(workflow.ExecutorKubelet, &pod.Spec) == nil
			var states strings.Builder
			for _, n := range names {
				st, ok := containerStatus(pod, n)
				if !ok {
					return fmt.Errorf("no container %q in the pod (containers: %v)", n, containerNames(pod))
				}
				state := stateName(st.State)
				fmt.Fprintf(&states, "%s=%s;", n, state)
				switch {
				case st.State.Terminated != nil, e.sawExit(n, st.ContainerID):
					done[n] = true
				case st.State.Running != nil && !watching[n] && watch:
					watching[n] = true
					go func(name, id string) {
						exits <- watchResult{container: name, containerID: id, err: e.watchExit(ctx, name)}
					}(n, st.ContainerID)
				}
			}
			if allDone() {
				return nil
			}
			if s := states.String(); s != last {
				last, interval = s, e.cfg.PollInitial
			}
		}

		tick := e.after(interval)
	waitTick:
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case r := <-exits:
				if r.err != nil {
					e.log.WithError(r.err).WithField("container", r.container).
						Debug("kubelet: exec watch unavailable; polling /pods alone")
					continue
				}
				e.log.WithField("container", r.container).Debug("kubelet: exec watch saw the container's processes die")
				done[r.container] = true
				e.markExitSeen(r.container, r.containerID)
				if allDone() {
					return nil
				}
			case <-tick:
				break waitTick
			}
		}
		interval = min(2*interval, opt.pollMax)
	}
}

// markExitSeen records that the exec watch saw the container (instance id)
// die, so GetExitCode waits for the kubelet's status to catch up and Kill
// does not signal it again.
func (e *Executor) markExitSeen(name, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exitSeen[name] = id
}

// sawExit reports whether the exec watch saw this instance of the
// container die. A container restarted since (a native sidecar) has
// another ID.
func (e *Executor) sawExit(name, id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen, ok := e.exitSeen[name]
	return ok && seen == id
}

// retryable reports whether a failed /pods poll may succeed if tried again:
// server errors, broken connections, and a list without the pod (a kubelet
// that has just restarted lists no pods until it has synced with the API
// server); not authentication, authorisation or certificates.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code >= http.StatusInternalServerError || se.Code == http.StatusTooManyRequests
	}
	var te *TLSError
	if errors.As(err, &te) {
		return false
	}
	if errors.Is(err, ErrPodNotFound) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}
