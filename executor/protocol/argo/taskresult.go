package argo

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/report"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// taskResultGVR is Argo's WorkflowTaskResult resource, through which Argo
// Workflows v3.3's controller reads a node's outputs.
func taskResultGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowtaskresults"}
}

// TaskResultReporter reports outputs as Argo Workflows v3.3.8's argoexec
// does: a WorkflowTaskResult named after the node (ARGO_NODE_ID), labelled
// with the workflow (and the controller's instance ID), owned by the pod;
// created, or merge-patched when it exists. When the service account may not
// write task results (403), it falls back to Fallback (the pod's outputs
// annotation), as Argo does; any other failure is retried on a bounded
// backoff within ctx. Outputs with nothing in them are not reported.
type TaskResultReporter struct {
	// Client writes the task result.
	Client dynamic.Interface
	// Namespace is the pod's, where the task result goes.
	Namespace string
	// NodeID names the task result (ARGO_NODE_ID).
	NodeID string
	// WorkflowName and InstanceID label it (ARGO_WORKFLOW_NAME, ARGO_INSTANCE_ID).
	WorkflowName, InstanceID string
	// PodName and PodUID make the pod its owner, so it is deleted with the pod.
	PodName, PodUID string
	// Fallback reports when task results are forbidden; nil makes a 403 an error.
	Fallback flow.OutputReporter
	// Clock paces the retries; nil means the real clock.
	Clock clock.Clock
}

// taskResultOutputs is Argo's Outputs as v3.3.8's controller decodes it: no
// exit code (the controller reads main's status) and nothing Argo does not
// know.
type taskResultOutputs struct {
	Parameters []wf.Parameter `json:"parameters,omitempty"`
	Artifacts  []wf.Artifact  `json:"artifacts,omitempty"`
	Result     *string        `json:"result,omitempty"`
}

// TaskResultOutputsBudget bounds the outputs of one WorkflowTaskResult: a
// task result is one etcd object, whose request etcd refuses above 1.5 MiB
// by default (--max-request-bytes), and this leaves room for its metadata
// and the progress. No annotation budget applies to it: the result is the
// last 256 KiB of main's output, as Argo keeps it.
const TaskResultOutputsBudget = 1 << 20

// Report creates or patches the task result's outputs. A result that would
// push the outputs over TaskResultOutputsBudget is cut to its tail
// (FitResult); outputs over it even without a result are refused, naming
// the biggest. The fallback on 403 gets the outputs as collected and fits
// them to its own budget.
func (r *TaskResultReporter) Report(ctx context.Context, outputs *wf.NodeOutputs) error {
	if len(outputs.Parameters) == 0 && len(outputs.Artifacts) == 0 && outputs.Result == nil {
		return nil
	}
	fit := wf.NodeOutputs{Parameters: outputs.Parameters, Artifacts: outputs.Artifacts, Result: outputs.Result,
		ResultTruncated: outputs.ResultTruncated, ResultDroppedBytes: outputs.ResultDroppedBytes, ResultIsLog: outputs.ResultIsLog,
		ResultReplaced: outputs.ResultReplaced, ResultIncomplete: outputs.ResultIncomplete}
	full, _, err := flow.FitResult(&fit, TaskResultOutputsBudget)
	if err != nil {
		return err
	}
	if err := report.CheckBudget(&fit, len(full), TaskResultOutputsBudget, fmt.Sprintf("a WorkflowTaskResult's %d-byte budget", TaskResultOutputsBudget)); err != nil {
		return fmt.Errorf("report outputs in WorkflowTaskResult %s/%s: %w", r.Namespace, r.NodeID, err)
	}
	o := taskResultOutputs{Parameters: fit.Parameters, Artifacts: fit.Artifacts, Result: fit.Result}
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode outputs: %w", err)
	}
	var outMap map[string]any
	if err := json.Unmarshal(b, &outMap); err != nil {
		return fmt.Errorf("encode outputs: %w", err)
	}
	fields := map[string]any{"outputs": outMap}
	// Argo's Outputs has no field for what was replaced or may be missing:
	// the task result's message (which v3.3.8's controller does not read)
	// carries it, beside wait's log.
	var notes []string
	if fit.ResultReplaced != nil {
		notes = append(notes, fit.ResultReplaced.String())
	}
	if fit.ResultIncomplete != "" {
		notes = append(notes, "the result may be incomplete: "+fit.ResultIncomplete)
	}
	if len(notes) > 0 {
		fields["message"] = strings.Join(notes, "; ")
	}
	return r.upsert(ctx, fields, func() error {
		if r.Fallback == nil {
			return nil
		}
		return r.Fallback.Report(ctx, outputs)
	})
}

// ReportProgress creates or patches the task result's progress (N/M), as
// Argo's argoexec does on every ARGO_PROGRESS_PATCH_TICK_DURATION; on 403
// it goes to the pod's progress annotation when Fallback can write one.
func (r *TaskResultReporter) ReportProgress(ctx context.Context, progress string) error {
	return r.upsert(ctx, map[string]any{"progress": progress}, func() error {
		if p, ok := r.Fallback.(flow.ProgressReporter); ok {
			return p.ReportProgress(ctx, progress)
		}
		return nil
	})
}

// upsert creates the task result with fields set, or merge-patches those
// fields when it exists; fallback runs instead on 403, when Fallback is
// set.
func (r *TaskResultReporter) upsert(ctx context.Context, fields map[string]any, fallback func() error) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "WorkflowTaskResult",
	}}
	names := make([]string, 0, len(fields))
	for k, v := range fields {
		obj.Object[k] = v
		names = append(names, k)
	}
	sort.Strings(names)
	field := strings.Join(names, " and ")
	obj.SetName(r.NodeID)
	obj.SetNamespace(r.Namespace)
	labels := map[string]string{wf.LabelWorkflow: r.WorkflowName}
	if r.InstanceID != "" {
		labels[wf.LabelControllerInstanceID] = r.InstanceID
	}
	obj.SetLabels(labels)
	// Argo v3.3.8 writes the non-canonical kind "pods"; its garbage
	// collection works either way, and we match what its controller expects.
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "pods", Name: r.PodName, UID: types.UID(r.PodUID)}})
	patch, err := json.Marshal(fields)
	if err != nil {
		return fmt.Errorf("encode %s patch: %w", field, err)
	}
	res := r.Client.Resource(taskResultGVR()).Namespace(r.Namespace)
	what := fmt.Sprintf("%s of WorkflowTaskResult %s/%s", field, r.Namespace, r.NodeID)
	retry := report.Retry{Clock: r.Clock, First: time.Second, MaxDelay: 8 * time.Second, Attempts: taskResultAttempts}
	err = retry.Do(ctx, "write "+what, func(ctx context.Context) error {
		_, err := res.Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = res.Patch(ctx, r.NodeID, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		return err
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) && r.Fallback != nil:
		if ferr := fallback(); ferr != nil {
			return fmt.Errorf("write %s: %w; the fallback to the pod annotation failed too: %w", what, err, ferr)
		}
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("write %s (grant the workflow's service account create and patch on workflowtaskresults.argoproj.io): %w", what, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("write %s: the WorkflowTaskResult CRD is not installed (install Argo Workflows v3.3's CRDs): %w", what, err)
	}
	return fmt.Errorf("write %s: %w", what, err)
}

// taskResultAttempts bounds the tries of one report, as Argo's (5 steps).
const taskResultAttempts = 5
