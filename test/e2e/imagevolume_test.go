//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/executor/emissary"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// TestEmissaryImageVolume: with emissaryImageVolume: always, an emissary
// pod has no init container; main and its wrapper run argoexec from the
// executor image mounted as an image volume (KEP-4639), the wrapper reads
// the template from the projected annotation, and the outputs come from
// main's own filesystem as with init. It needs a cell whose nodes mount
// image volumes (Kubernetes >= 1.35 with containerd >= 2.1): make
// test-matrix runs it on containerd 2.x; on containerd 1.6 (make test's
// cell) it is skipped, saying why, and argoexec-step's auto picks init
// there (TestRunEmissaryImageVolume).
//
//	ARGOEXEC_E2E_SKIP_UP=1 hack/e2e.sh -run TestEmissaryImageVolume
func TestEmissaryImageVolume(t *testing.T) {
	e := newWfEnv(t, emissary.ExecutorEmissary)
	// The testbed's kubelet node, where the pod runs (the docker tests
	// register a node of their own, which no kubelet serves).
	node, err := e.f.Client.CoreV1().Nodes().Get(context.Background(), e.f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := podspec.ImageVolumeSupport([]corev1.Node{*node}); !ok {
		t.Skipf("this cell's nodes cannot mount image volumes: %s (make test-matrix runs this case on containerd 2.x)", why)
	}
	cfg := *e.cfg
	cfg.EmissaryImageVolume = config.ImageVolumeAlways
	e.cfg = &cfg
	tmpl := e.scriptOnly("image-volume")
	tmpl.Script.Source += "\necho 42 > /tmp/answer"
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "answer", ValueFrom: &wf.ValueFrom{Path: "/tmp/answer"}}}
	r := e.run(t, "image-volume", tmpl, nil, false)
	if n := len(r.pod.Spec.InitContainers); n != 0 {
		t.Errorf("the pod has %d init containers, want none", n)
	}
	if got := r.pod.Spec.Containers[0].Command[0]; got != emissary.ImageBinary(&cfg) {
		t.Errorf("main runs %s, want the wrapper from the image volume %s", got, emissary.ImageBinary(&cfg))
	}
	if r.pod.Status.Phase != corev1.PodSucceeded || r.outputs == nil || r.outputs.Result == nil {
		t.Fatalf("phase %s, outputs %+v; wait log:\n%s", r.pod.Status.Phase, r.outputs, r.waitLog)
	}
	if lines := strings.Split(*r.outputs.Result, "\n"); len(lines) != 2 || lines[1] != "hello world <&>" {
		t.Errorf("result %q, want the uptime and \"hello world <&>\"", *r.outputs.Result)
	}
	if len(r.outputs.Parameters) != 1 || r.outputs.Parameters[0].Value == nil || r.outputs.Parameters[0].Value.String() != "42" {
		t.Errorf("parameters %+v, want answer=42 from main's own /tmp", r.outputs.Parameters)
	}
}
