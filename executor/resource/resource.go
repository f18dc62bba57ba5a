// Package resource is `argoexec resource ACTION`: a resource template's
// action (get, create, apply, delete, replace or patch) on one Kubernetes
// object through the dynamic client, then a wait on the template's success
// and failure conditions, then its output parameters (jsonPath, jqFilter)
// reported as Argo Workflows v3.3.8's argoexec reports them.
//
// It is its own package, not a file of executor: it shares nothing with the
// init and wait flows but the OutputReporter, and it carries dependencies
// (gjson, gojq, the RESTMapper) that they do not need.
package resource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/internal/backoff"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// The actions of a resource template.
const (
	ActionGet     = "get"
	ActionCreate  = "create"
	ActionApply   = "apply"
	ActionDelete  = "delete"
	ActionReplace = "replace"
	ActionPatch   = "patch"
)

// Actions lists the actions Run supports, in Argo's documentation order.
func Actions() []string {
	return []string{ActionGet, ActionCreate, ActionApply, ActionDelete, ActionReplace, ActionPatch}
}

// The patch types of action patch (mergeStrategy).
const (
	MergeStrategic = "strategic"
	MergeMerge     = "merge"
	MergeJSON      = "json"
)

// DefaultFieldManager is the field manager of every write (server-side
// apply's owner of the fields it sets).
const DefaultFieldManager = "argoexec"

// DefaultPollInterval is how often the object is read when the API server
// refuses to watch it (Argo's RESOURCE_STATE_CHECK_INTERVAL default).
const DefaultPollInterval = 5 * time.Second

// Config is what one run acts on.
type Config struct {
	// Action is the command's argument (Argo passes template.resource.action).
	Action string
	// Template is the resource template.
	Template *wf.Template
	// PodName and PodNamespace are the pod argoexec runs in: the namespace is
	// the object's when its manifest and flags name none, and the pod's
	// Workflow owner is the object's owner under setOwnerReference.
	PodName, PodNamespace string
	// Deadline bounds the whole run (ARGO_DEADLINE); zero means none.
	Deadline time.Time
	// PollInterval paces reads when a watch is refused; zero means DefaultPollInterval.
	PollInterval time.Duration
}

// Executor runs a resource template. Every field but Clock must be set.
type Executor struct {
	Config
	// Client reaches the objects (and the pod, for setOwnerReference).
	Client dynamic.Interface
	// Mapper maps kinds and resource names to resources (discovery, cached;
	// shortcuts such as cm expanded).
	Mapper meta.RESTMapper
	// Reporter reports the output parameters (a WorkflowTaskResult under Argo).
	Reporter flow.OutputReporter
	// Clock paces polling, retries and the deadline; nil means the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Log is the command's logger.
	Log *logrus.Entry
}

// errDeadline is the cause of the run's context when Deadline passes.
type deadlineError struct{ deadline time.Time }

func (e *deadlineError) Error() string {
	return fmt.Sprintf("the step's deadline (%s, ARGO_DEADLINE) passed", e.deadline.UTC().Format(time.RFC3339))
}

// Run does the template's action, waits on its conditions and reports its
// outputs. A failure condition that holds is a *FailedError in the chain; a
// cancelled ctx (SIGTERM) wraps context.Canceled.
func (e *Executor) Run(ctx context.Context) error {
	if e.Clock == nil {
		e.Clock = clock.RealClock{}
	}
	if e.PollInterval <= 0 {
		e.PollInterval = DefaultPollInterval
	}
	tmpl := e.Template
	if tmpl == nil || tmpl.Resource == nil {
		return errors.New("the template is not a resource template (it has no resource field): argoexec resource runs resource templates only")
	}
	res := tmpl.Resource
	if !slices.Contains(Actions(), e.Action) {
		return fmt.Errorf("resource template action %q is not supported: want one of %s", e.Action, strings.Join(Actions(), ", "))
	}
	if res.Action != "" && res.Action != e.Action {
		return fmt.Errorf("the command's action %q is not the template's resource.action %q: the pod was not built from this template", e.Action, res.Action)
	}
	if e.Action == ActionDelete && (res.SuccessCondition != "" || res.FailureCondition != "" || len(tmpl.Outputs.Parameters) > 0) {
		return errors.New("successCondition, failureCondition and outputs are not supported for delete action: remove them, or get the object in a step of its own")
	}
	conds, err := parseConditions(res.SuccessCondition, res.FailureCondition)
	if err != nil {
		return err
	}
	fl, err := parseFlags(e.Action, res.Flags)
	if err != nil {
		return err
	}
	if err := checkOutputParameters(tmpl.Outputs.Parameters); err != nil {
		return err
	}

	if !e.Deadline.IsZero() {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		t := e.Clock.AfterFunc(e.Deadline.Sub(e.Clock.Now()), func() { cancel(&deadlineError{e.Deadline}) })
		defer t.Stop()
	}

	tgts, err := e.targets(ctx, fl)
	if err != nil {
		return err
	}
	if e.Action == ActionDelete {
		return e.delete(ctx, tgts, fl)
	}
	if len(tgts) != 1 {
		return fmt.Errorf("action %s acts on exactly one object; the template names %d", e.Action, len(tgts))
	}
	t := tgts[0]
	obj, err := e.act(ctx, t, fl)
	if err != nil {
		return err
	}
	if obj == nil { // get --ignore-not-found of a missing object
		e.Log.Infof("%s does not exist (--ignore-not-found): nothing to wait for", t)
		return e.report(ctx, defaultOutputs(tmpl.Outputs.Parameters))
	}
	t.name = obj.GetName()
	e.Log.Infof("Resource: %s", t)
	if !conds.none() {
		if err := e.waitConditions(ctx, t, conds); err != nil {
			return err
		}
	}
	if len(tmpl.Outputs.Parameters) == 0 {
		e.Log.Info("No output parameters")
		return nil
	}
	out, err := e.outputs(ctx, t, tmpl.Outputs.Parameters)
	if err != nil {
		return err
	}
	return e.report(ctx, out)
}

// report sends the outputs, if any.
func (e *Executor) report(ctx context.Context, out *wf.NodeOutputs) error {
	if out == nil || len(out.Parameters) == 0 {
		return nil
	}
	if err := e.Reporter.Report(ctx, out); err != nil {
		return fmt.Errorf("report the output parameters: %w", e.ctxErr(ctx, err))
	}
	return nil
}

// act does the action on one object and returns the object as the API
// server has it afterwards; nil for a get of a missing object under
// --ignore-not-found.
func (e *Executor) act(ctx context.Context, t *target, fl *flags) (*unstructured.Unstructured, error) {
	ri := e.resourceClient(t)
	manager := DefaultFieldManager
	if fl.fieldManager != "" {
		manager = fl.fieldManager
	}
	validation := metav1.FieldValidationStrict
	if fl.validation != "" {
		validation = fl.validation
	}
	var obj *unstructured.Unstructured
	var verb string
	err := e.retry(ctx, func() error {
		var err error
		switch e.Action {
		case ActionGet:
			verb = "get"
			obj, err = ri.Get(ctx, t.name, metav1.GetOptions{})
			if err != nil && isNotFound(err) && fl.ignoreNotFound != nil && *fl.ignoreNotFound {
				obj, err = nil, nil
			}
		case ActionCreate:
			verb = "create"
			obj, err = ri.Create(ctx, t.obj, metav1.CreateOptions{FieldManager: manager, FieldValidation: validation})
		case ActionApply:
			verb = "patch"
			force := fl.forceConflicts == nil || *fl.forceConflicts
			obj, err = ri.Apply(ctx, t.name, t.obj, metav1.ApplyOptions{FieldManager: manager, Force: force})
		case ActionReplace:
			verb = "update"
			obj, err = e.replace(ctx, ri, t, manager, validation)
		case ActionPatch:
			verb = "patch"
			obj, err = ri.Patch(ctx, t.name, t.patchType, t.patch, metav1.PatchOptions{FieldManager: manager, FieldValidation: validation})
		}
		return err
	})
	if err != nil {
		return nil, e.apiError(ctx, verb, t, err)
	}
	return obj, nil
}

// replace updates the object to the manifest, as kubectl replace: when the
// manifest has no resourceVersion it overwrites whatever is there.
func (e *Executor) replace(ctx context.Context, ri dynamic.ResourceInterface, t *target, manager, validation string) (*unstructured.Unstructured, error) {
	obj := t.obj.DeepCopy()
	if obj.GetResourceVersion() == "" {
		cur, err := ri.Get(ctx, t.name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		obj.SetResourceVersion(cur.GetResourceVersion())
	}
	return ri.Update(ctx, obj, metav1.UpdateOptions{FieldManager: manager, FieldValidation: validation})
}

// delete deletes the objects, a missing one being no error (Argo runs
// kubectl delete --ignore-not-found), and by default waits until they are
// gone, as kubectl delete does (--wait=false does not).
func (e *Executor) delete(ctx context.Context, tgts []*target, fl *flags) error {
	opts := metav1.DeleteOptions{PropagationPolicy: fl.propagation, GracePeriodSeconds: fl.gracePeriod}
	if opts.PropagationPolicy == nil {
		bg := metav1.DeletePropagationBackground // kubectl's --cascade default
		opts.PropagationPolicy = &bg
	}
	ignore := fl.ignoreNotFound == nil || *fl.ignoreNotFound
	var deleted []*target
	for _, t := range tgts {
		err := e.retry(ctx, func() error { return e.resourceClient(t).Delete(ctx, t.name, opts) })
		switch {
		case err == nil:
			e.Log.Infof("%s deleted", t)
			deleted = append(deleted, t)
		case isNotFound(err) && ignore:
			e.Log.Infof("%s does not exist: nothing to delete", t)
		default:
			return e.apiError(ctx, "delete", t, err)
		}
	}
	if fl.wait != nil && !*fl.wait {
		return nil
	}
	for _, t := range deleted {
		if err := e.waitGone(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// retryAttempts bounds the tries of one API call that fails transiently,
// as Argo retries kubectl (client-go's DefaultBackoff: 4 steps).
const retryAttempts = 4

// retry calls f until it succeeds, fails for good, or retryAttempts pass.
func (e *Executor) retry(ctx context.Context, f func() error) error {
	delays := backoff.New(e.Clock, wait.Backoff{Duration: 10 * time.Millisecond, Factor: 5})
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || !transient(err) || attempt == retryAttempts {
			return err
		}
		e.Log.Infof("transient API error (attempt %d of %d), retrying in %s: %v", attempt, retryAttempts, delays.Delay(), err)
		if delays.Wait(ctx) != nil {
			return err
		}
	}
}

// ctxErr says why ctx ended when it did: the deadline, or the cancellation
// (SIGTERM); else it returns err.
func (e *Executor) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	var d *deadlineError
	if cause := context.Cause(ctx); errors.As(cause, &d) {
		return d
	}
	return fmt.Errorf("stopped (SIGTERM or SIGINT): %w", ctx.Err())
}
