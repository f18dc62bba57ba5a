package report

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestPodReporterRetries: the report's patch (its one request when the
// outputs fit) survives an API server that is restarting (connection
// refused) or whose etcd stalls (503, 504), and gives up at once on what
// will not pass (403), or when ctx ends.
func TestPodReporterRetries(t *testing.T) {
	refused := &net0Error{syscall.ECONNREFUSED}
	stalled := apierrors.NewTimeoutError("etcd did not answer", 1)
	busy := apierrors.NewServiceUnavailable("etcd is slow")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "wf-1", errors.New("no patch"))
	tests := []struct {
		name              string
		getErrs, patchErr []error
		cancelAfter       int // cancel ctx after this many failed calls; 0: never
		wantErr           string
		wantPatched       bool
		wantCalls         int
	}{
		{name: "API server restarting, then etcd slow: reported", patchErr: []error{refused, refused, stalled, busy},
			wantPatched: true, wantCalls: 5},
		{name: "403 is an error at once", patchErr: []error{forbidden}, wantErr: `RBAC verb "patch" on resource "pods"`, wantCalls: 1},
		{name: "the report's context ends first", patchErr: []error{refused, refused, refused, refused}, cancelAfter: 2,
			wantErr: "after 2 attempts", wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-1", Namespace: "ns"}}
			client := fake.NewClientset(pod)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls, failed := 0, 0
			fail := func(errs *[]error) k8stesting.ReactionFunc {
				return func(k8stesting.Action) (bool, runtime.Object, error) {
					calls++
					if len(*errs) == 0 {
						return false, nil, nil
					}
					err := (*errs)[0]
					*errs = (*errs)[1:]
					if failed++; failed == tt.cancelAfter {
						cancel()
					}
					return true, nil, err
				}
			}
			client.PrependReactor("get", "pods", fail(&tt.getErrs))
			client.PrependReactor("patch", "pods", fail(&tt.patchErr))
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			r := &PodReporter{Pods: client.CoreV1().Pods("ns"), Namespace: "ns", Name: "wf-1", Clock: clk}
			out := &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "answer", Value: wf.AnyStringPtr("42")}}}
			_, err := stepWhileWaiting(clk, func() error { return r.Report(ctx, out) })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Report: %v, want error containing %q", err, tt.wantErr)
			}
			if calls != tt.wantCalls {
				t.Errorf("%d API calls, want %d", calls, tt.wantCalls)
			}
			tt.getErrs, tt.patchErr = nil, nil
			got, err := client.CoreV1().Pods("ns").Get(context.Background(), "wf-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, patched := got.Annotations[wf.AnnotationOutputs]; patched != tt.wantPatched {
				t.Errorf("outputs annotation present = %v, want %v", patched, tt.wantPatched)
			}
		})
	}
}
