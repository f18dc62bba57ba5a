package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// result is what a run observed: the pod as last seen and when it was
// created, first seen Running and seen finished.
type result struct {
	pod                        *corev1.Pod
	executor                   string
	created, running, finished time.Time
}

// watchPod follows res.pod through watches until it Succeeded or Failed,
// recording the times. Each (re)connection reads the pod once and then
// watches from its resourceVersion, so no change is missed; a watch that
// the server closes is re-established. It never sleeps: ctx bounds it.
func watchPod(ctx context.Context, client kubernetes.Interface, res *result, now func() time.Time, log *logrus.Entry) error {
	name := res.pod.Name
	pods := client.CoreV1().Pods(res.pod.Namespace)
	cond := func(ev watch.Event) (bool, error) { return observe(ev, name, res, now, log) }
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("watch pod %s: %w", name, ctxErr(ctx, err))
		}
		if done, err := cond(watch.Event{Type: watch.Modified, Object: p}); done || err != nil {
			return err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: p.ResourceVersion,
		})
		if err != nil {
			return fmt.Errorf("watch pod %s: %w", name, ctxErr(ctx, err))
		}
		_, err = watchtools.UntilWithoutRetry(ctx, w, cond)
		w.Stop()
		switch {
		case errors.Is(err, watchtools.ErrWatchClosed) && ctx.Err() == nil:
			log.Debug("watch closed by the server; reconnecting")
		case err != nil:
			return fmt.Errorf("watch pod %s: %w", name, ctxErr(ctx, err))
		default:
			return nil
		}
	}
}

// ctxErr prefers the context's error, which says timeout or interrupt,
// over the error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// observe records one watch event; it returns true once the pod has finished.
func observe(ev watch.Event, name string, res *result, now func() time.Time, log *logrus.Entry) (bool, error) {
	switch ev.Type {
	case watch.Deleted:
		return false, fmt.Errorf("pod %s was deleted before it finished", name)
	case watch.Error:
		return false, apierrors.FromObject(ev.Object)
	}
	p, ok := ev.Object.(*corev1.Pod)
	if !ok || p.Name != name {
		return false, nil
	}
	res.pod = p
	t := now()
	if res.running.IsZero() && p.Status.Phase == corev1.PodRunning {
		res.running = t
		log.WithField("after", t.Sub(res.created).Round(time.Millisecond)).Info("pod running")
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		res.finished = t
		log.WithField("phase", p.Status.Phase).Info("pod finished")
		return true, nil
	}
	return false, nil
}

// executorOf reads the backend the pod builder chose from wait's env.
func executorOf(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name != workflow.WaitContainerName {
			continue
		}
		for _, e := range c.Env {
			if e.Name == workflow.EnvContainerRuntimeExecutor {
				return e.Value
			}
		}
	}
	return "unknown"
}
