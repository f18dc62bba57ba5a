package report

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/kubeclient"
)

// PodReporter reports outputs as JSON in the annotation
// workflows.argoproj.io/outputs of wait's own pod (a merge patch, which the
// RBAC verb pods/patch allows).
type PodReporter struct {
	// Pods are the pods of the pod's namespace, reached with the pod's
	// service account.
	Pods kubeclient.Pods
	// Namespace and Name identify the pod.
	Namespace, Name string
	// Log says when the result is cut to fit and when a report call is
	// retried; nil logs nothing.
	Log *logrus.Entry
	// Clock paces the retries of the report; nil means the real clock.
	Clock clock.Clock
}

// podReportAttempts bounds the tries of each report call.
const podReportAttempts = 12

// retry is how the report's GET and patch are retried: from 0.5 s
// doubling to 4 s, for as long as the report's context allows (the save
// window, SaveTimeout), so that an API server restarting or an etcd stall
// within it costs no outputs; at most podReportAttempts tries (about 40 s)
// even under a context without a deadline.
func (r *PodReporter) retry() Retry {
	return Retry{Clock: r.Clock, First: 500 * time.Millisecond, MaxDelay: 4 * time.Second, Attempts: podReportAttempts, Log: r.Log}
}

// Report patches the outputs annotation, in one request when the outputs
// fit: the pod is read only when the API server refuses the patch (422: the
// pod's annotations would pass 256 KiB). A script result is then cut to what
// the pod's other annotations and outputs leave (FitResult: the tail is
// kept, and the cut is logged and flagged in the outputs) and the patch is
// sent again. Outputs that are over the budget even without a result are
// refused, with an error naming the biggest output and what the other
// annotations use. The GET and the patch are retried while they fail for a
// reason that may pass (Retry), within ctx.
func (r *PodReporter) Report(ctx context.Context, outputs *wf.NodeOutputs) error {
	whole := wf.MaxAnnotationBytes - len(wf.AnnotationOutputs)
	b, dropped, err := flow.FitResult(outputs, whole)
	if err != nil {
		return err
	}
	if err := CheckOutputsBudget(outputs, len(b), whole); err != nil {
		return fmt.Errorf("report outputs on pod %s/%s: %w", r.Namespace, r.Name, err) // even alone on the pod
	}
	if err := r.patch(ctx, b); err == nil || !apierrors.IsInvalid(err) {
		r.logCut(outputs, dropped, whole)
		return err
	}
	var pod *corev1.Pod
	err = r.retry().Do(ctx, "get pod "+r.Namespace+"/"+r.Name+" to fit the outputs", func(ctx context.Context) (err error) {
		pod, err = r.Pods.Get(ctx, r.Name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("get pod %s/%s to fit the outputs to its annotation budget: %w%s", r.Namespace, r.Name, err, RBACHint(err, "get", "pods", r.Namespace))
	}
	used := 0
	for k, v := range pod.Annotations {
		if k != wf.AnnotationOutputs {
			used += len(k) + len(v)
		}
	}
	budget := whole - used
	b, more, err := flow.FitResult(outputs, budget)
	if err != nil {
		return err
	}
	r.logCut(outputs, dropped+more, budget)
	if err := CheckOutputsBudget(outputs, len(b), budget); err != nil {
		return fmt.Errorf("report outputs on pod %s/%s: %w (the pod's other annotations use %d bytes, %d of them the template in %s)",
			r.Namespace, r.Name, err, used, len(pod.Annotations[wf.AnnotationTemplate]), wf.AnnotationTemplate)
	}
	return r.patch(ctx, b)
}

// patch merge-patches outputs JSON b into the pod's outputs annotation.
func (r *PodReporter) patch(ctx context.Context, b []byte) error {
	return r.patchAnnotation(ctx, "outputs", wf.AnnotationOutputs, string(b))
}

// patchAnnotation merge-patches annotation key (what names it in
// messages) to value on the pod, retried as retry says.
func (r *PodReporter) patchAnnotation(ctx context.Context, what, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return fmt.Errorf("encode %s patch: %w", what, err)
	}
	err = r.retry().Do(ctx, "patch "+what+" annotation on pod "+r.Namespace+"/"+r.Name, func(ctx context.Context) error {
		_, err := r.Pods.Patch(ctx, r.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("patch %s annotation on pod %s/%s: %w%s", what, r.Namespace, r.Name, err, RBACHint(err, "patch", "pods", r.Namespace))
	}
	return nil
}

// logCut warns when the report cut dropped bytes off the result to fit
// budget bytes.
func (r *PodReporter) logCut(outputs *wf.NodeOutputs, dropped, budget int) {
	if r.Log == nil || outputs.Result == nil || dropped == 0 {
		return
	}
	r.Log.Warnf("the result keeps the last %d bytes of main's output (%d dropped in all) to fit the %d bytes left of pod %s/%s's annotation budget; write large output to a file and declare it as an output artifact",
		len(*outputs.Result), outputs.ResultDroppedBytes, budget, r.Namespace, r.Name)
}

// CheckOutputsBudget returns an error when size bytes of outputs JSON exceed
// budget, naming the biggest outputs and suggesting an artifact.
func CheckOutputsBudget(outputs *wf.NodeOutputs, size, budget int) error {
	return CheckBudget(outputs, size, budget, fmt.Sprintf("the pod's %d-byte annotation budget", wf.MaxAnnotationBytes))
}

// CheckBudget is CheckOutputsBudget for any budget; of names it ("the
// pod's 262144-byte annotation budget").
func CheckBudget(outputs *wf.NodeOutputs, size, budget int, of string) error {
	if size <= budget {
		return nil
	}
	type item struct {
		name string
		size int
	}
	var items []item
	for _, p := range outputs.Parameters {
		if p.Value != nil {
			items = append(items, item{"output parameter " + p.Name, len(*p.Value)})
		}
	}
	if outputs.Result != nil {
		items = append(items, item{"script result", len(*outputs.Result)})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].size > items[j].size })
	biggest := "none"
	if len(items) > 0 {
		biggest = fmt.Sprintf("%s (%d bytes)", items[0].name, items[0].size)
	}
	return fmt.Errorf("outputs are %d bytes, over the %d bytes left of %s; the biggest is %s: write large values to a file and declare it as an output artifact",
		size, budget, of, biggest)
}

// ReportProgress patches the pod annotation workflows.argoproj.io/progress
// (N/M), the fallback of Argo's argoexec for progress when task results
// are forbidden.
func (r *PodReporter) ReportProgress(ctx context.Context, progress string) error {
	return r.patchAnnotation(ctx, "progress", wf.AnnotationProgress, progress)
}

// NewPodReporter returns a PodReporter for pod namespace/name, reaching the
// API server with restCfg; log says when the result is cut and when a call
// is retried.
func NewPodReporter(restCfg *rest.Config, namespace, name string, log *logrus.Entry) (*PodReporter, error) {
	client, err := kubeclient.New(restCfg)
	if err != nil {
		return nil, fmt.Errorf("create Kubernetes client: %w", err)
	}
	return &PodReporter{Pods: client.Pods(namespace), Namespace: namespace, Name: name, Log: log}, nil
}
