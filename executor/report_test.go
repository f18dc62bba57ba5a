package executor

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestPodReporter: outputs land in the outputs annotation with one request
// (a patch); outputs that fit the 256 KiB budget alone but not beside the
// pod's template annotation are refused by the API server (here a reactor
// that checks the budget as its validation does), and the error names the
// biggest output and the bytes the template takes; outputs over the budget
// alone are refused before any request.
func TestPodReporter(t *testing.T) {
	const templateBytes = 200 * 1024
	tests := []struct {
		name      string
		value     string
		wantErr   []string
		wantPatch bool
		wantCalls []string
	}{
		{name: "fits", value: "42", wantPatch: true, wantCalls: []string{"patch pods"}},
		{name: "over the budget left by the template", value: strings.Repeat("x", 100*1024),
			wantErr:   []string{"output parameter big (102400 bytes)", "output artifact", "other annotations use", "204800 of them the template", wf.AnnotationTemplate},
			wantCalls: []string{"patch pods", "get pods"}},
		{name: "over the budget alone", value: strings.Repeat("x", 300*1024),
			wantErr: []string{"output parameter big (307200 bytes)", "output artifact"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-1", Namespace: "ns",
				Annotations: map[string]string{wf.AnnotationTemplate: strings.Repeat("t", templateBytes)}}}
			client := fake.NewClientset(pod)
			var calls []string
			client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				calls = append(calls, a.GetVerb()+" "+a.GetResource().Resource)
				p, ok := a.(k8stesting.PatchAction)
				if !ok {
					return false, nil, nil
				}
				// The API server's validation: all annotations within MaxAnnotationBytes.
				var patch struct {
					Metadata struct{ Annotations map[string]string } `json:"metadata"`
				}
				if err := json.Unmarshal(p.GetPatch(), &patch); err != nil {
					return true, nil, err
				}
				total := 0
				for k, v := range pod.Annotations {
					total += len(k) + len(v)
				}
				for k, v := range patch.Metadata.Annotations {
					total += len(k) + len(v)
				}
				if total > wf.MaxAnnotationBytes {
					return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "wf-1", field.ErrorList{
						field.TooLong(field.NewPath("metadata", "annotations"), "", wf.MaxAnnotationBytes)})
				}
				return false, nil, nil
			})
			r := &PodReporter{Client: client, Namespace: "ns", Name: "wf-1"}
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
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("requests %q, want %q", calls, tt.wantCalls)
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

// BenchmarkPodReporter reports the API requests one Report of a small step's
// outputs makes (requests/op) and its cost on a fake clientset.
//
//	go test -run '^$' -bench PodReporter ./executor/
func BenchmarkPodReporter(b *testing.B) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-1", Namespace: "ns",
		Annotations: map[string]string{wf.AnnotationTemplate: strings.Repeat("t", 2048)}}}
	client := fake.NewClientset(pod)
	requests := 0
	client.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		requests++
		return false, nil, nil
	})
	r := &PodReporter{Client: client, Namespace: "ns", Name: "wf-1"}
	result := "hello"
	out := &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "out", Value: wf.AnyStringPtr("42")}}, Result: &result}
	for b.Loop() {
		if err := r.Report(context.Background(), out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
}
