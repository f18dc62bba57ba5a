package k8sapi

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/argoexec/argoexec/executor/internal/podexec"
)

// watchSource is the engine's view of the pod through the API server: a
// GET, and a watch of the pod (field selector on its name) that client-go's
// RetryWatcher resumes from the last resourceVersion when the server closes
// it, with client-go's backoff when the server refuses it. When the version
// is too old (410 Gone, which RetryWatcher does not retry) it GETs the pod
// and watches from there. It needs pods get and watch, not list.
type watchSource struct{ e *Executor }

var errExpired = errors.New("watch resourceVersion expired")

// Get implements podexec.PodSource.
func (s watchSource) Get(ctx context.Context) (*corev1.Pod, error) { return s.e.getPod(ctx) }

// Follow implements podexec.PodSource. A 403 on the watch names the missing
// permission.
func (s watchSource) Follow(ctx context.Context, from *corev1.Pod, _ podexec.FollowOptions, fn func(*corev1.Pod) error) error {
	rv := from.ResourceVersion
	for {
		err := s.watch(ctx, rv, fn)
		if !errors.Is(err, errExpired) {
			return err
		}
		s.e.log.Debug("pod watch expired (410), getting the pod again")
		pod, err := s.e.client.Pods(s.e.cfg.Namespace).Get(ctx, s.e.cfg.PodName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("get pod %s after the watch expired: %w", s.e.podRef(), podexec.ErrPodGone)
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return s.e.apiError(ctx, "get pod "+s.e.podRef()+" after the watch expired", "get", "pods", err)
		}
		if err := fn(pod); err != nil {
			return err
		}
		rv = pod.ResourceVersion
	}
}

// watch follows the pod from resourceVersion rv with a RetryWatcher,
// stopped and joined before it returns. It returns errExpired on 410.
func (s watchSource) watch(ctx context.Context, rv string, fn func(*corev1.Pod) error) error {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, podWatcher(s))
	if err != nil {
		return fmt.Errorf("watch pod %s: %w", s.e.podRef(), err)
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
				return fmt.Errorf("watch pod %s: the watch ended", s.e.podRef())
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					if err := fn(p); err != nil {
						return err
					}
				}
			case watch.Deleted:
				return fmt.Errorf("watch pod %s: %w", s.e.podRef(), podexec.ErrPodGone)
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				switch {
				case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
					return errExpired
				case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
					return s.e.apiError(ctx, "watch pod "+s.e.podRef(), "watch", "pods", err)
				}
				return fmt.Errorf("watch pod %s: %w", s.e.podRef(), err)
			}
		}
	}
}

// podWatcher opens watches of the one pod for RetryWatcher. A watch the
// server refuses with 410 becomes a watch that reports it, so that
// RetryWatcher stops (it would retry the same version for ever otherwise).
type podWatcher struct{ e *Executor }

// WatchWithContext implements cache.WatcherWithContext.
func (w podWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.e.cfg.PodName).String()
	wi, err := w.e.client.Pods(w.e.cfg.Namespace).Watch(ctx, opts)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		var status apierrors.APIStatus
		errors.As(err, &status)
		fw := watch.NewFakeWithChanSize(1, false)
		st := status.Status()
		fw.Error(&st)
		return fw, nil
	}
	return wi, err
}
