package executor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestPodReporter: outputs land in the outputs annotation; outputs that fit
// the 256 KiB budget alone but not beside the pod's template annotation are
// refused before any patch, with an error naming the biggest output and the
// bytes the template takes.
func TestPodReporter(t *testing.T) {
	const templateBytes = 200 * 1024
	tests := []struct {
		name      string
		value     string
		wantErr   []string
		wantPatch bool
	}{
		{name: "fits", value: "42", wantPatch: true},
		{name: "over the budget left by the template", value: strings.Repeat("x", 100*1024),
			wantErr: []string{"output parameter big (102400 bytes)", "output artifact", "other annotations use", "204800 of them the template", wf.AnnotationTemplate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-1", Namespace: "ns",
				Annotations: map[string]string{wf.AnnotationTemplate: strings.Repeat("t", templateBytes)}}}
			client := fake.NewClientset(pod)
			r := &PodReporter{Pods: client.CoreV1().Pods("ns"), Namespace: "ns", Name: "wf-1"}
			code := 0
			out := &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "big", Value: wf.AnyStringPtr(tt.value)}}, ExitCode: &code}
			err := r.Report(context.Background(), out)
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Report error %v does not contain %q", err, w)
				}
			}
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatalf("Report: %v", err)
			}
			got, err := client.CoreV1().Pods("ns").Get(context.Background(), "wf-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, patched := got.Annotations[wf.AnnotationOutputs]
			if patched != tt.wantPatch {
				t.Fatalf("outputs annotation present = %v, want %v", patched, tt.wantPatch)
			}
			if !patched {
				return
			}
			var back wf.NodeOutputs
			if err := json.Unmarshal([]byte(a), &back); err != nil {
				t.Fatalf("outputs annotation %q: %v", a, err)
			}
			if len(back.Parameters) != 1 || string(*back.Parameters[0].Value) != tt.value || back.ExitCode == nil || *back.ExitCode != 0 {
				t.Errorf("outputs annotation = %s", a)
			}
			if len(got.Annotations[wf.AnnotationTemplate]) != templateBytes {
				t.Error("the patch changed the template annotation")
			}
		})
	}
}
