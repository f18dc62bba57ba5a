package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// PodReporter reports outputs as JSON in the annotation
// workflows.argoproj.io/outputs of wait's own pod (a merge patch, which the
// RBAC verb pods/patch allows).
type PodReporter struct {
	// Client reaches the API server with the pod's service account.
	Client kubernetes.Interface
	// Namespace and Name identify the pod.
	Namespace, Name string
}

// Report patches the outputs annotation, in one request: the pod is read
// only to explain a refusal. Outputs that alone exceed the API server's
// 256 KiB annotation budget are refused before the request; outputs that
// exceed what the pod's other annotations leave of it are refused by the
// API server (422), and the error then names the biggest output and what
// the other annotations use.
func (r *PodReporter) Report(ctx context.Context, outputs *wf.NodeOutputs) error {
	b, err := json.Marshal(outputs)
	if err != nil {
		return fmt.Errorf("encode outputs: %w", err)
	}
	if err := CheckOutputsBudget(outputs, len(b), wf.MaxAnnotationBytes-len(wf.AnnotationOutputs)); err != nil {
		return fmt.Errorf("report outputs on pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{wf.AnnotationOutputs: string(b)}}})
	if err != nil {
		return fmt.Errorf("encode outputs patch: %w", err)
	}
	_, err = r.Client.CoreV1().Pods(r.Namespace).Patch(ctx, r.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsInvalid(err):
		return r.overBudget(ctx, outputs, len(b), err)
	}
	return fmt.Errorf("patch outputs annotation on pod %s/%s (needs RBAC pods patch): %w", r.Namespace, r.Name, err)
}

// overBudget explains the API server's refusal (refused) of outputs of size
// bytes: it reads the pod for what the other annotations use. When the
// budget check finds nothing wrong, the refusal is returned as it is.
func (r *PodReporter) overBudget(ctx context.Context, outputs *wf.NodeOutputs, size int, refused error) error {
	pod, err := r.Client.CoreV1().Pods(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		return errors.Join(fmt.Errorf("report outputs on pod %s/%s: %d bytes of outputs JSON: %w", r.Namespace, r.Name, size, refused),
			fmt.Errorf("get pod %s/%s to explain the refusal: %w", r.Namespace, r.Name, err))
	}
	used := 0
	for k, v := range pod.Annotations {
		if k != wf.AnnotationOutputs {
			used += len(k) + len(v)
		}
	}
	budget := wf.MaxAnnotationBytes - used - len(wf.AnnotationOutputs)
	if err := CheckOutputsBudget(outputs, size, budget); err != nil {
		return fmt.Errorf("report outputs on pod %s/%s: %w (the pod's other annotations use %d bytes, %d of them the template in %s)",
			r.Namespace, r.Name, err, used, len(pod.Annotations[wf.AnnotationTemplate]), wf.AnnotationTemplate)
	}
	return fmt.Errorf("patch outputs annotation on pod %s/%s: %w", r.Namespace, r.Name, refused)
}

// CheckOutputsBudget returns an error when size bytes of outputs JSON exceed
// budget, naming the biggest outputs and suggesting an artifact.
func CheckOutputsBudget(outputs *wf.NodeOutputs, size, budget int) error {
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
	return fmt.Errorf("outputs are %d bytes, over the %d bytes left of the pod's %d-byte annotation budget; the biggest is %s: write large values to a file and declare it as an output artifact",
		size, budget, wf.MaxAnnotationBytes, biggest)
}

// ReportProgress patches the pod annotation workflows.argoproj.io/progress
// (N/M), the fallback of Argo's argoexec for progress when task results
// are forbidden.
func (r *PodReporter) ReportProgress(ctx context.Context, progress string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{wf.AnnotationProgress: progress}}})
	if err != nil {
		return fmt.Errorf("encode progress patch: %w", err)
	}
	if _, err := r.Client.CoreV1().Pods(r.Namespace).Patch(ctx, r.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch progress annotation on pod %s/%s (needs RBAC pods patch): %w", r.Namespace, r.Name, err)
	}
	return nil
}
