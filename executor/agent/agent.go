// Package agent is `argoexec agent main`: Argo Workflows v3.3.8's agent,
// which Argo's controller runs, one pod per workflow, for the workflow's
// HTTP and executor-plugin templates (argo-v3.3-protocol.md §8). It watches
// the WorkflowTaskSet named after the workflow, runs each task of
// spec.tasks once (an HTTP request, or a call to an executor plugin's
// sidecar), and merge-patches each node's result into status.nodes through
// the status subresource, at most once per patch period. It stops when the
// taskset is deleted or labelled completed.
//
// It is its own package, beside executor/resource and executor/data: it
// shares nothing with the init and wait flows, and it carries expr-lang/expr
// (successCondition), which only argoexec-main links.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/internal/backoff"
	"github.com/argoexec/argoexec/executor/report"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Defaults of Argo v3.3.8's agent, each spelled once.
const (
	// DefaultTaskWorkers is how many tasks run at once when
	// ARGO_AGENT_TASK_WORKERS is not set.
	DefaultTaskWorkers = 16
	// DefaultPatchRate is how often results are patched when
	// ARGO_AGENT_PATCH_RATE is not set (the controller's requeue time).
	DefaultPatchRate = 10 * time.Second
)

// TaskSetResource is Argo's WorkflowTaskSet resource.
func TaskSetResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowtasksets"}
}

// Config is what one agent serves.
type Config struct {
	// Namespace is the workflow's (the agent pod's service account's).
	Namespace string
	// WorkflowName names the workflow and its WorkflowTaskSet.
	WorkflowName string
	// Plugins are the executor plugins' sidecars, in the order they are
	// asked to run a plugin template (ARGO_PLUGIN_NAMES' order).
	Plugins []*Plugin
	// TaskWorkers is how many tasks run at once; zero means DefaultTaskWorkers.
	TaskWorkers int
	// PatchRate is how often, at most, results are patched; zero means
	// DefaultPatchRate.
	PatchRate time.Duration
}

// Agent runs the tasks of one workflow's WorkflowTaskSet. Client and Log
// must be set.
type Agent struct {
	Config
	// Client reaches the WorkflowTaskSet (list, watch; patch of status) and
	// the Secrets that HTTP headers take their values from (get). It is the
	// dynamic client alone: the typed core client would add 1.8 MB of
	// apply configurations to argoexec-main.
	Client dynamic.Interface
	// Transport sends HTTP templates' requests and plugin calls; nil means
	// a clone of http.DefaultTransport (proxies from the environment).
	Transport *http.Transport
	// Clock paces the patches, timeouts, retries and requeues; nil means
	// the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Log is the command's logger.
	Log *logrus.Entry

	// clients are the HTTP clients, verifying TLS and not, built by Run.
	clients map[bool]*http.Client
}

// task is one node's template, as the controller wrote it.
type task struct {
	nodeID string
	raw    json.RawMessage
}

// result is one node's result.
type result struct {
	nodeID string
	node   wf.NodeResult
}

// Run serves the workflow until its taskset is deleted or labelled
// completed (nil), ctx ends (its error) or results cannot be reported for
// a reason that will not pass, such as missing RBAC (an error saying what
// to grant). Every goroutine it starts has returned when it returns.
func (a *Agent) Run(ctx context.Context) error {
	if a.WorkflowName == "" || a.Namespace == "" || a.Client == nil {
		return errors.New("agent: the workflow name, namespace and client must be set")
	}
	if a.Clock == nil {
		a.Clock = clock.RealClock{}
	}
	if a.TaskWorkers <= 0 {
		a.TaskWorkers = DefaultTaskWorkers
	}
	if a.PatchRate <= 0 {
		a.PatchRate = DefaultPatchRate
	}
	a.clients = newHTTPClients(a.Transport)
	a.Log.WithFields(logrus.Fields{"taskWorkers": a.TaskWorkers, "patchRate": a.PatchRate, "plugins": len(a.Plugins),
		"taskset": a.Namespace + "/" + a.WorkflowName}).Info("argoexec agent: watching the workflow's WorkflowTaskSet")

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tasks := make(chan task)
	results := make(chan result)
	var workers, patcher sync.WaitGroup
	for range a.TaskWorkers {
		workers.Go(func() { a.work(ctx, tasks, results) })
	}
	patcher.Go(func() {
		if err := a.patchResults(ctx, results); err != nil {
			cancel(err)
		}
	})

	err := a.watch(ctx, tasks)
	// The taskset is gone or done (or ctx ended): what is still running
	// has no node left to report to.
	cancel(nil)
	close(tasks)
	workers.Wait()
	close(results)
	patcher.Wait()
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// watch sends each task of the taskset, once per node, to tasks, until the
// taskset is deleted or completed (nil) or ctx ends.
func (a *Agent) watch(ctx context.Context, tasks chan<- task) error {
	ri := a.Client.Resource(TaskSetResource()).Namespace(a.Namespace)
	selector := fields.OneTermEqualSelector("metadata.name", a.WorkflowName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return ri.Watch(ctx, o)
		},
	}
	key := a.Namespace + "/" + a.WorkflowName
	exists := func(store cache.Store) (bool, error) {
		_, ok, err := store.GetByKey(key)
		if err != nil {
			return false, err
		}
		if !ok {
			a.Log.Info("the WorkflowTaskSet does not exist (the workflow is done or deleted): stopping")
		}
		return !ok, nil
	}
	considered := map[string]bool{}
	var sendErr error
	onEvent := func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Deleted:
			a.Log.Info("the WorkflowTaskSet was deleted: stopping")
			return true, nil
		case watch.Added, watch.Modified:
		default:
			return false, nil
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || u.GetName() != a.WorkflowName {
			return false, nil
		}
		ts, err := decodeTaskSet(u)
		if err != nil {
			return false, err
		}
		if ts.Labels[wf.LabelCompleted] == "true" {
			a.Log.Info("the workflow is completed (its WorkflowTaskSet is labelled " + wf.LabelCompleted + "=true): stopping")
			return true, nil
		}
		ids := make([]string, 0, len(ts.Spec.Tasks))
		for id := range ts.Spec.Tasks {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			// Each node runs once: a request is never sent twice because
			// the taskset changed (Argo's agent keeps the same rule).
			if considered[id] {
				continue
			}
			considered[id] = true
			select {
			case tasks <- task{nodeID: id, raw: ts.Spec.Tasks[id]}:
			case <-ctx.Done():
				sendErr = context.Cause(ctx)
				return false, sendErr
			}
		}
		return false, nil
	}
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, a.Client), &unstructured.Unstructured{}, exists, onEvent)
	switch {
	case sendErr != nil:
		return sendErr
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("agent: watch WorkflowTaskSet %s: %w", key, context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("agent: watch WorkflowTaskSet %s: %w%s", key, err, report.RBACHint(err, "watch", "workflowtasksets.argoproj.io", a.Namespace))
	}
	return nil
}

// decodeTaskSet reads a WorkflowTaskSet from its unstructured form.
func decodeTaskSet(u *unstructured.Unstructured) (*wf.WorkflowTaskSet, error) {
	js, err := u.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("agent: encode WorkflowTaskSet %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	ts := &wf.WorkflowTaskSet{}
	if err := json.Unmarshal(js, ts); err != nil {
		return nil, fmt.Errorf("agent: decode WorkflowTaskSet %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return ts, nil
}

// work runs the tasks it receives until tasks is closed or ctx ends. A
// plugin that asks to be called again (requeue) is called again after that
// long, by the same worker.
func (a *Agent) work(ctx context.Context, tasks <-chan task, results chan<- result) {
	for t := range tasks {
		log := a.Log.WithField("nodeID", t.nodeID)
		for {
			log.Info("running task")
			node, requeue := a.runTask(ctx, t, log)
			if ctx.Err() != nil {
				return // the taskset is gone: nothing to report to
			}
			log.WithFields(logrus.Fields{"phase": node.Phase, "message": node.Message, "requeue": requeue}).Info("task result")
			if node.Phase != "" {
				select {
				case results <- result{nodeID: t.nodeID, node: node}:
				case <-ctx.Done():
					return
				}
			}
			if requeue <= 0 {
				break
			}
			if backoff.Sleep(ctx, a.Clock, requeue) != nil {
				return
			}
		}
	}
}

// runTask runs one task and returns its result, and when a plugin asks to
// be called again, after how long.
func (a *Agent) runTask(ctx context.Context, t task, log *logrus.Entry) (wf.NodeResult, time.Duration) {
	tmpl, err := wf.DecodeTemplate(t.raw)
	if err != nil {
		return wf.NodeResult{Phase: wf.NodeError, Message: fmt.Sprintf("error processing task: %v", err)}, 0
	}
	switch {
	case tmpl.HTTP != nil:
		return a.runHTTP(ctx, tmpl.HTTP, log), 0
	case tmpl.Plugin != nil:
		return a.runPlugin(ctx, t.raw, log)
	default:
		return wf.NodeResult{Phase: wf.NodeError, Message: fmt.Sprintf("error processing task: agent cannot execute template %q: it is neither an http nor a plugin template", tmpl.Name)}, 0
	}
}

// patchResults gathers results and merge-patches them into the taskset's
// status every PatchRate, until results is closed or ctx ends. It returns
// an error only when the patch is refused for a reason that will not pass
// (forbidden, the taskset's resource missing), saying what to do.
func (a *Agent) patchResults(ctx context.Context, results <-chan result) error {
	ticker := a.Clock.NewTicker(a.PatchRate)
	defer ticker.Stop()
	pending := map[string]wf.NodeResult{}
	converted := false // pending holds the errors that replaced refused results
	for {
		select {
		case r, ok := <-results:
			if !ok {
				return nil
			}
			pending[r.nodeID] = r.node
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if len(pending) == 0 {
				continue
			}
			err := a.patch(ctx, pending)
			switch {
			case err == nil:
				pending, converted = map[string]wf.NodeResult{}, false
			case ctx.Err() != nil:
				return nil
			case apierrors.IsNotFound(err):
				// Deleted: the workflow is gone, and the watch ends Run.
				a.Log.WithField("nodes", len(pending)).Info("the WorkflowTaskSet is gone: dropping the results not yet reported")
				pending, converted = map[string]wf.NodeResult{}, false
			case report.Retriable(err):
				a.Log.WithError(err).Warn("patch the WorkflowTaskSet's status failed; retrying at the next tick")
			case report.RBACHint(err, "patch", "workflowtasksets/status", a.Namespace) != "":
				return fmt.Errorf("%w%s", err, report.RBACHint(err, "patch", "workflowtasksets/status", a.Namespace))
			default:
				// The results themselves were refused (too big, invalid):
				// report that instead, as Argo's agent does, so that the
				// workflow does not wait for them forever.
				if converted {
					return fmt.Errorf("%w (even the errors that replaced the results were refused)", err)
				}
				converted = true
				a.Log.WithError(err).Error("the WorkflowTaskSet refused the results; reporting the error on each node instead")
				for id := range pending {
					pending[id] = wf.NodeResult{Phase: wf.NodeError,
						Message: fmt.Sprintf("HTTP request completed successfully but an error occurred when patching its result: %v", err)}
				}
			}
		}
	}
}

// StatusPatch is the merge patch of the taskset's status that reports
// nodes: {"status":{"nodes":{ID: NodeResult}}}, as Argo's agent sends it.
func StatusPatch(nodes map[string]wf.NodeResult) ([]byte, error) {
	return json.Marshal(map[string]any{"status": wf.WorkflowTaskSetStatus{Nodes: nodes}})
}

// patch merge-patches nodes into the taskset's status, retrying what may pass.
func (a *Agent) patch(ctx context.Context, nodes map[string]wf.NodeResult) error {
	body, err := StatusPatch(nodes)
	if err != nil {
		return fmt.Errorf("agent: encode the results: %w", err)
	}
	ri := a.Client.Resource(TaskSetResource()).Namespace(a.Namespace)
	retry := report.Retry{Clock: a.Clock, First: time.Second, MaxDelay: 30 * time.Second, Attempts: 5, Log: a.Log}
	err = retry.Do(ctx, "patch the WorkflowTaskSet's status", func(ctx context.Context) error {
		_, err := ri.Patch(ctx, a.WorkflowName, types.MergePatchType, body, metav1.PatchOptions{}, "status")
		return err
	})
	if err != nil {
		return fmt.Errorf("agent: patch the status of WorkflowTaskSet %s/%s with %d results: %w", a.Namespace, a.WorkflowName, len(nodes), err)
	}
	a.Log.WithField("nodes", len(nodes)).Info("patched the WorkflowTaskSet's status")
	return nil
}
