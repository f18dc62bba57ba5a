package report

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestPodReporterForbidden: a 403 on the report's get (made only when the
// API server refused the patch as over the annotation budget) or patch
// names the verb and resource to grant; any other failure does not claim
// RBAC is missing.
func TestPodReporterForbidden(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name    string
		verb    string // the request that fails
		value   string // the output parameter's value
		err     error
		want    []string
		notWant string
	}{
		{name: "get refused", verb: "get", value: strings.Repeat("x", 100*1024), err: apierrors.NewForbidden(pods, "wf-1", errors.New("RBAC: no")),
			want: []string{"get pod ns/wf-1 to fit the outputs", "forbidden", `RBAC verb "get" on resource "pods" in namespace ns`}},
		{name: "patch refused", verb: "patch", err: apierrors.NewForbidden(pods, "wf-1", errors.New("RBAC: no")),
			want: []string{"patch outputs annotation on pod ns/wf-1", "forbidden", `RBAC verb "patch" on resource "pods" in namespace ns`}},
		{name: "patch fails otherwise", verb: "patch", err: apierrors.NewServiceUnavailable("busy"),
			want: []string{"patch outputs annotation on pod ns/wf-1", "busy"}, notWant: "RBAC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, _ := validatingClient(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-1", Namespace: "ns",
				Annotations: map[string]string{wf.AnnotationTemplate: strings.Repeat("t", 200*1024)}}})
			client.PrependReactor(tt.verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			r := &PodReporter{Pods: client.CoreV1().Pods("ns"), Namespace: "ns", Name: "wf-1"}
			value := tt.value
			if value == "" {
				value = "x"
			}
			// a 503 is retried until the report's context ends (TestPodReporterRetries)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := r.Report(ctx, &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "p", Value: wf.AnyStringPtr(value)}}})
			t.Logf("error: %v", err)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Report error %v does not contain %q", err, w)
				}
			}
			if tt.notWant != "" && err != nil && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("Report error %v says %q for a failure that is not a refusal", err, tt.notWant)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("Report error %v does not wrap %v", err, tt.err)
			}
		})
	}
}
