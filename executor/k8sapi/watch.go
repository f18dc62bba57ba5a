package k8sapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/internal/backoff"
	"github.com/argoexec/argoexec/executor/internal/podexec"
)

// watchSource is the engine's view of the pod through the API server: a
// GET, and a watch of the pod (field selector on its name) that client-go's
// RetryWatcher resumes from the last resourceVersion when the server closes
// it, with client-go's backoff when the server refuses it. When the version
// is too old (410 Gone, which RetryWatcher does not retry) it GETs the pod
// and watches from there. It needs pods get and watch, not list.
//
// A 401 or 403 on the first watch is the missing grant and ends Follow at
// once. Once a watch has worked, a refusal is taken for an API server that
// has just restarted (it answers 403 until its RBAC caches are filled, for
// a second or more) or a token that has just been rotated, and is retried
// up to maxRefusals times in a row, refusalDelay apart, before it counts.
type watchSource struct {
	e     *Executor
	clock clock.Clock
}

// maxRefusals and refusalDelay bound how long a refused re-watch or relist
// is retried: 30 tries about a second apart (RetryWatcher's own restart
// delay is 1 s), far longer than this testbed's API server takes to fill
// its RBAC caches after a restart (the fault suite saw the 403 for under
// 2 s), short enough that a grant really revoked mid-step is named within
// half a minute.
const (
	maxRefusals  = 30
	refusalDelay = time.Second
)

var errExpired = errors.New("watch resourceVersion expired")

// Get implements podexec.PodSource.
func (s watchSource) Get(ctx context.Context) (*corev1.Pod, error) { return s.e.getPod(ctx) }

// Follow implements podexec.PodSource. A 403 on the watch names the missing
// permission.
func (s watchSource) Follow(ctx context.Context, from *corev1.Pod, _ podexec.FollowOptions, fn func(*corev1.Pod) error) error {
	pw := &podWatcher{e: s.e}
	rv := from.ResourceVersion
	for {
		err := s.watch(ctx, pw, rv, fn)
		if !errors.Is(err, errExpired) {
			return err
		}
		s.e.log.Debug("pod watch expired (410), getting the pod again")
		pod, err := s.relist(ctx, pw)
		if err != nil {
			return err
		}
		if err := fn(pod); err != nil {
			return err
		}
		rv = pod.ResourceVersion
	}
}

// relist reads the pod after a 410. The watch worked before it, so a
// refusal is retried as pw.refused says.
func (s watchSource) relist(ctx context.Context, pw *podWatcher) (*corev1.Pod, error) {
	const op = "get pod after the watch expired"
	for {
		pod, err := s.e.client.Pods(s.e.cfg.Namespace).Get(ctx, s.e.cfg.PodName, metav1.GetOptions{})
		switch {
		case err == nil:
			pw.refusals = 0
			return pod, nil
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("%s: %w", op, podexec.ErrPodGone)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !pw.refused(op, err):
			return nil, s.e.apiError(ctx, op, "get", "pods", err)
		}
		if err := backoff.Sleep(ctx, s.clock, refusalDelay); err != nil {
			return nil, err
		}
	}
}

// watch follows the pod from resourceVersion rv with a RetryWatcher,
// stopped and joined before it returns. It returns errExpired on 410. Its
// errors do not name the pod: the engine's do.
func (s watchSource) watch(ctx context.Context, pw *podWatcher, rv string, fn func(*corev1.Pod) error) error {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, pw)
	if err != nil {
		return fmt.Errorf("watch pod: %w", err)
	}
	defer func() {
		rw.Stop()
		<-rw.Done()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, open := <-rw.ResultChan():
			if !open {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return errors.New("watch pod: the watch ended")
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					if err := fn(p); err != nil {
						return err
					}
				}
			case watch.Deleted:
				return fmt.Errorf("watch pod: %w", podexec.ErrPodGone)
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				switch {
				case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
					return errExpired
				case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
					return s.e.apiError(ctx, "watch pod", "watch", "pods", err)
				}
				return fmt.Errorf("watch pod: %w", err)
			}
		}
	}
}

// podWatcher opens watches of the one pod for RetryWatcher. A watch the
// server refuses with 410 becomes a watch that reports it, so that
// RetryWatcher stops (it would retry the same version for ever otherwise).
// A 401 or 403 after a watch has worked becomes an error RetryWatcher
// retries, up to maxRefusals in a row (see watchSource); RetryWatcher gives
// up on the first one it sees.
type podWatcher struct {
	e *Executor
	// worked is set once a watch call has been answered; refusals counts
	// the 401s and 403s in a row since.
	worked   bool
	refusals int
}

// WatchWithContext implements cache.WatcherWithContext.
func (w *podWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.e.cfg.PodName).String()
	wi, err := w.e.client.Pods(w.e.cfg.Namespace).Watch(ctx, opts)
	switch {
	case err == nil:
		w.worked, w.refusals = true, 0
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		var status apierrors.APIStatus
		errors.As(err, &status)
		fw := watch.NewFakeWithChanSize(1, false)
		st := status.Status()
		fw.Error(&st)
		return fw, nil
	case w.refused("watch pod", err):
		// %v, not %w: RetryWatcher must not see the status, or it stops.
		return nil, fmt.Errorf("watch pod %s refused after an outage or token rotation, retrying: %v", w.e.podRef(), err)
	}
	return wi, err
}

// refused says whether err, from op, is a 401 or 403 to retry: one after a
// watch has worked, and fewer than maxRefusals in a row. It logs each.
func (w *podWatcher) refused(op string, err error) bool {
	if !w.worked || !(apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)) || w.refusals >= maxRefusals {
		return false
	}
	w.refusals++
	w.e.log.WithError(err).WithField("attempt", w.refusals).Infof(
		"%s %s: refused although the watch worked before; an API server that has just restarted refuses until its RBAC caches are filled, and a token that has just been rotated is refused once: retrying (%d times at most)",
		op, w.e.podRef(), maxRefusals)
	return true
}
