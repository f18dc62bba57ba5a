package resource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/watchlist"
)

// checkFunc judges the object's state: done, or an error that ends the
// wait. A nil object means it does not exist (was deleted).
type checkFunc func(obj *unstructured.Unstructured) (done bool, err error)

// DeletedError says the object disappeared while its conditions were
// being waited on; Argo does not retry that either.
type DeletedError struct {
	// Object names the object.
	Object string
}

func (e *DeletedError) Error() string {
	return fmt.Sprintf("%s has been deleted while its status was still being checked", e.Object)
}

// waitConditions waits until the success condition holds or the failure
// condition does.
func (e *Executor) waitConditions(ctx context.Context, t *target, c *conditions) error {
	e.Log.Infof("Waiting for %s: success condition %q, failure condition %q", t, e.Template.Resource.SuccessCondition, e.Template.Resource.FailureCondition)
	last := ""
	check := func(obj *unstructured.Unstructured) (bool, error) {
		if obj == nil {
			return false, &DeletedError{Object: t.String()}
		}
		b, err := obj.MarshalJSON()
		if err != nil {
			return false, fmt.Errorf("encode %s: %w", t, err)
		}
		done, pending, err := c.evaluate(b)
		var failed *FailedError
		switch {
		case errors.As(err, &failed):
			e.Log.Infof("%s: %v", t, err)
			return false, fmt.Errorf("%s: %w", t, err)
		case done:
			e.Log.Infof("%s: %d/%d success conditions matched", t, len(c.success), len(c.success))
			return true, nil
		}
		if s := strings.Join(pending, ", "); s != last {
			e.Log.Infof("%s: success conditions not matched yet: %s", t, s)
			last = s
		}
		return false, nil
	}
	if err := e.waitFor(ctx, t, check); err != nil {
		return err
	}
	return nil
}

// waitGone waits until a deleted object is gone (its finalizers have run).
func (e *Executor) waitGone(ctx context.Context, t *target) error {
	e.Log.Infof("Waiting for %s to be gone (--wait=false does not wait)", t)
	err := e.waitFor(ctx, t, func(obj *unstructured.Unstructured) (bool, error) { return obj == nil, nil })
	if err != nil {
		return fmt.Errorf("wait for %s to be deleted: %w", t, err)
	}
	return nil
}

// waitFor reads the object, then watches it until check says done or fails.
// Where the API server refuses the watch (RBAC grants get but not list or
// watch), it reads the object every PollInterval instead.
func (e *Executor) waitFor(ctx context.Context, t *target, check checkFunc) error {
	ri := e.resourceClient(t)
	// get reads the object and judges it; apiErr says the read failed.
	var apiErr error
	get := func() (bool, error) {
		apiErr = nil
		obj, err := ri.Get(ctx, t.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return check(nil)
		case err != nil:
			apiErr = err
			return false, e.apiError(ctx, "get", t, err)
		}
		return check(obj)
	}
	done, err := get()
	if err != nil || done {
		return err
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lw := &refusingListWatch{ctx: wctx, ri: ri, name: t.name, onRefused: cancel,
		noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(e.Client)}
	key := t.name
	if t.namespace != "" {
		key = t.namespace + "/" + t.name
	}
	var checkErr error
	judge := func(obj *unstructured.Unstructured) (bool, error) {
		d, err := check(obj)
		if err != nil {
			checkErr = err
		}
		return d, err
	}
	precondition := func(store cache.Store) (bool, error) {
		item, exists, err := store.GetByKey(key)
		if err != nil {
			return false, err
		}
		if !exists {
			// The informer's first list may come from the watch cache and
			// lag; only a read says the object is gone.
			return get()
		}
		return judge(item.(*unstructured.Unstructured))
	}
	condition := func(ev watch.Event) (bool, error) {
		obj, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || obj.GetName() != t.name {
			return false, nil
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			return judge(obj)
		case watch.Deleted:
			return judge(nil)
		}
		return false, nil
	}
	_, err = watchtools.UntilWithSync(wctx, lw, &unstructured.Unstructured{}, precondition, condition)
	switch {
	case err == nil:
		return nil
	case checkErr != nil:
		return checkErr
	case lw.refusal() != nil && ctx.Err() == nil:
		e.Log.Warnf("the API server refuses to watch %s (%v): reading it every %s instead", t, lw.refusal(), e.PollInterval)
		return e.poll(ctx, t, get, func() error { return apiErr })
	case ctx.Err() != nil:
		return fmt.Errorf("wait for %s: %w", t, e.ctxErr(ctx, err))
	}
	return fmt.Errorf("watch %s: %w", t, err)
}

// poll reads the object every PollInterval until it is done.
func (e *Executor) poll(ctx context.Context, t *target, get func() (bool, error), apiErr func() error) error {
	tick := e.Clock.NewTicker(e.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", t, e.ctxErr(ctx, ctx.Err()))
		case <-tick.C():
		}
		done, err := get()
		last := apiErr()
		switch {
		case err == nil && done:
			return nil
		case err == nil:
		case last != nil && transient(last):
			e.Log.Infof("read %s: transient error, retrying in %s: %v", t, e.PollInterval, last)
		default:
			return err
		}
	}
}

// refusingListWatch lists and watches one object by name, and records the
// API server's refusal (403, 405) to do either, cancelling the wait so that
// it can fall back to polling: an informer would retry a refusal forever.
type refusingListWatch struct {
	// ctx is the wait's, for callers that pass none.
	ctx context.Context
	ri  interface {
		List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
		Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	}
	name      string
	onRefused func()
	// noWatchList says the client cannot stream the initial list over a
	// watch (a fake); the informer then lists first.
	noWatchList bool

	mu      sync.Mutex
	refused error
}

// IsWatchListSemanticsUnSupported tells the informer whether the client can
// stream the initial list over a watch.
func (l *refusingListWatch) IsWatchListSemanticsUnSupported() bool { return l.noWatchList }

func (l *refusingListWatch) refusal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

func (l *refusingListWatch) seen(err error) error {
	if apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsUnauthorized(err) {
		l.mu.Lock()
		if l.refused == nil {
			l.refused = err
		}
		l.mu.Unlock()
		l.onRefused()
	}
	return err
}

func (l *refusingListWatch) options(opts metav1.ListOptions) metav1.ListOptions {
	opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", l.name).String()
	return opts
}

// ListWithContext lists the object.
func (l *refusingListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list, err := l.ri.List(ctx, l.options(opts))
	if err != nil {
		return nil, l.seen(err)
	}
	return list, nil
}

// WatchWithContext watches the object.
func (l *refusingListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.ri.Watch(ctx, l.options(opts))
	if err != nil {
		return nil, l.seen(err)
	}
	return w, nil
}

// List lists the object (cache.Lister).
func (l *refusingListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(l.ctx, opts)
}

// Watch watches the object (cache.Watcher).
func (l *refusingListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(l.ctx, opts)
}
