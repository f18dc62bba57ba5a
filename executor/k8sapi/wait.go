package k8sapi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/argoexec/argoexec/executor/internal/podexec"
)

// Watch retry bounds, for watches the server refuses or closes at once.
const (
	watchRetryInitial = 100 * time.Millisecond
	watchRetryMax     = 5 * time.Second
)

// Wait blocks until every named container has terminated, or ctx ends.
//
// Two paths race. The pod watch (field selector on the pod's name, from the
// resourceVersion of a GET; resumed where it left off when it closes,
// relisted on 410 Gone) sees an exit once the kubelet reports it, 0.7-0.9 s
// after it happens. Beside it, for each named container that is running,
// an exec session into the container (podexec.Client.WaitExit) ends within
// a second of the container's exit, usually well before the status: when it
// is killed with the container, Wait counts that container as exited. The
// fast path never supplies the exit code: GetExitCode waits for the status.
// The fast path is skipped with Config.NoExecWait and in pods with
// shareProcessNamespace or hostPID (there the exec'd shell outlives the
// container's process).
//
// A container name the pod does not have, a pod deleted while waiting, and a
// pod that finished without running a named container are errors.
func (e *Executor) Wait(ctx context.Context, containerNames []string) error {
	pod, err := e.getPod(ctx)
	if err != nil {
		return err
	}
	if err := checkNames(pod, containerNames, e.podRef()); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the exec sessions of the fast path
	fast := make(chan string, len(containerNames))
	started := map[string]bool{}
	seen := map[string]bool{}
	startFast := func(p *corev1.Pod) {
		if e.cfg.NoExecWait || podexec.CheckKillable("", &p.Spec) != nil {
			return
		}
		for _, n := range containerNames {
			if st, ok := containerStatus(p, n); ok && st.State.Running != nil && !started[n] {
				started[n] = true
				go func() {
					err := e.pe.WaitExit(ctx, n)
					if err == nil {
						fast <- n
						return
					}
					if ctx.Err() == nil {
						e.log.WithError(err).WithField("container", n).Debug("exec fast path unavailable, relying on the pod watch")
					}
				}()
			}
		}
	}
	done := func(p *corev1.Pod) (bool, error) {
		all := true
		for _, n := range containerNames {
			st, _ := containerStatus(p, n)
			all = all && (st.State.Terminated != nil || seen[n])
		}
		if all {
			return true, nil
		}
		if err := finishedWithout(p, containerNames); err != nil {
			return false, err
		}
		startFast(p)
		return false, nil
	}
	onFast := func(n string) {
		e.log.WithField("container", n).Debug("exec session ended with the container: counting it as exited")
		seen[n] = true
		e.markExit(n)
	}
	_, err = e.follow(ctx, pod, containerNames, done, fast, onFast)
	return err
}

// watchUntil follows the pod (from pod, or from a GET when pod is nil)
// until every named container has terminated in its status, and returns the
// pod as last seen.
func (e *Executor) watchUntil(ctx context.Context, containerNames []string, pod *corev1.Pod) (*corev1.Pod, error) {
	if pod == nil {
		var err error
		if pod, err = e.getPod(ctx); err != nil {
			return nil, err
		}
		if err := checkNames(pod, containerNames, e.podRef()); err != nil {
			return nil, err
		}
	}
	done := func(p *corev1.Pod) (bool, error) {
		if allTerminated(p, containerNames) {
			return true, nil
		}
		return false, finishedWithout(p, containerNames)
	}
	return e.follow(ctx, pod, containerNames, done, nil, nil)
}

// follow calls done on pod and then on every new version of the pod from a
// watch, until done returns true or an error, ctx ends, or the pod is
// deleted. A container name from fast is passed to onFast and done is asked
// again. The watch resumes from the last resourceVersion seen when the
// server closes it, and relists (GET) when that version is too old (410).
func (e *Executor) follow(ctx context.Context, pod *corev1.Pod, names []string,
	done func(*corev1.Pod) (bool, error), fast <-chan string, onFast func(string)) (*corev1.Pod, error) {
	op := fmt.Sprintf("wait for containers %v of pod %s", names, e.podRef())
	fail := func(err error) (*corev1.Pod, error) {
		return pod, fmt.Errorf("k8sapi: %s: %w", op, err)
	}
	if ok, err := done(pod); ok || err != nil {
		return pod, err
	}
	pods := e.client.CoreV1().Pods(e.cfg.Namespace)
	rv := pod.ResourceVersion
	retry := watchRetryInitial
	for {
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:       fields.OneTermEqualSelector("metadata.name", e.cfg.PodName).String(),
			ResourceVersion:     rv,
			AllowWatchBookmarks: true,
		})
		relist, events := false, 0
		switch {
		case ctx.Err() != nil:
			return fail(ctx.Err())
		case err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)):
			relist = true
		case apierrors.IsForbidden(err):
			return pod, e.apiError(ctx, op, "watch", "pods", err)
		case err != nil:
			e.log.WithError(err).Warn("pod watch refused, retrying")
		default:
			var stop bool
			pod, rv, events, relist, stop, err = e.consume(ctx, w, pod, rv, done, fast, onFast)
			w.Stop()
			if stop || err != nil {
				if err != nil && ctx.Err() != nil {
					return fail(ctx.Err())
				}
				if err != nil {
					return fail(err)
				}
				return pod, nil
			}
		}
		if relist {
			e.log.Debug("pod watch expired (410), relisting")
			p, err := pods.Get(ctx, e.cfg.PodName, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return fail(fmt.Errorf("%w", errPodGone))
			case err != nil && ctx.Err() != nil:
				return fail(ctx.Err())
			case err != nil:
				return pod, e.apiError(ctx, "relist pod "+e.podRef(), "get", "pods", err)
			}
			pod, rv = p, p.ResourceVersion
			if ok, err := done(pod); ok || err != nil {
				return pod, err
			}
			continue
		}
		if events > 0 {
			retry = watchRetryInitial
			continue
		}
		// Refused, or closed without a single event: back off before
		// asking again, so a broken server is not hammered.
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fail(ctx.Err())
		case n := <-fast:
			t.Stop()
			onFast(n)
			if ok, err := done(pod); ok || err != nil {
				return pod, err
			}
		case <-t.C:
		}
		retry = min(2*retry, watchRetryMax)
	}
}

// consume reads the events of one watch. It returns the pod and
// resourceVersion last seen, how many events arrived, whether the caller
// must relist, and whether done said stop.
func (e *Executor) consume(ctx context.Context, w watch.Interface, pod *corev1.Pod, rv string,
	done func(*corev1.Pod) (bool, error), fast <-chan string, onFast func(string),
) (_ *corev1.Pod, _ string, events int, relist, stop bool, _ error) {
	for {
		select {
		case <-ctx.Done():
			return pod, rv, events, false, false, ctx.Err()
		case n := <-fast:
			onFast(n)
			if ok, err := done(pod); ok || err != nil {
				return pod, rv, events, false, ok, err
			}
		case ev, open := <-w.ResultChan():
			if !open {
				return pod, rv, events, false, false, nil
			}
			events++
			switch ev.Type {
			case watch.Added, watch.Modified:
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				pod, rv = p, p.ResourceVersion
				if ok, err := done(pod); ok || err != nil {
					return pod, rv, events, false, ok, err
				}
			case watch.Deleted:
				return pod, rv, events, false, false, errPodGone
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return pod, rv, events, true, false, nil
				}
				e.log.WithError(err).Warn("pod watch reported an error, resuming")
				return pod, rv, 0, false, false, nil
			}
		}
	}
}

// containerStatus finds the status of the named container, regular or init.
func containerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			if st.Name == name {
				return st, true
			}
		}
	}
	return corev1.ContainerStatus{}, false
}

func allTerminated(pod *corev1.Pod, names []string) bool {
	for _, n := range names {
		if st, _ := containerStatus(pod, n); st.State.Terminated == nil {
			return false
		}
	}
	return true
}

// finishedWithout is an error when the pod has finished (Succeeded or
// Failed) while a named container has not terminated: it never will.
func finishedWithout(pod *corev1.Pod, names []string) error {
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		return nil
	}
	for _, n := range names {
		if st, _ := containerStatus(pod, n); st.State.Terminated == nil {
			return fmt.Errorf("pod is %s but container %q never terminated (%s)", pod.Status.Phase, n, describeState(st.State))
		}
	}
	return nil
}

// containerNames lists the spec's init containers, then its containers.
func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func hasContainer(pod *corev1.Pod, name string) bool {
	return slices.Contains(containerNames(pod), name)
}

// checkNames refuses names the pod does not have: waiting on them would
// never end.
func checkNames(pod *corev1.Pod, names []string, ref string) error {
	var missing []string
	for _, n := range names {
		if !hasContainer(pod, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("k8sapi: wait for containers %v: pod %s has no container %s (it has %v)", names, ref, strings.Join(missing, ", "), containerNames(pod))
	}
	return nil
}

func describeState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.UTC().Format(time.RFC3339)
	case s.Waiting != nil && s.Waiting.Reason != "":
		return "waiting: " + s.Waiting.Reason
	case s.Waiting != nil:
		return "waiting"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated with code %d", s.Terminated.ExitCode)
	}
	return "no status yet"
}
