//go:build e2e

package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// scriptOnly is a script template with an input parameter and no input
// artifact: nothing for init to do.
func (e *wfEnv) scriptOnly(name string) *wf.Template {
	return &wf.Template{Name: name,
		Inputs: wf.Inputs{Parameters: []wf.Parameter{{Name: "who", Value: wf.AnyStringPtr("world")}}},
		Script: &wf.ScriptTemplate{
			Container: corev1.Container{Image: e.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"}, SecurityContext: mainSecurityContext()},
			Source:    "cat /proc/uptime\necho 'hello {{inputs.parameters.who}} <&>'",
		}}
}

// TestScriptWithoutInit gates the mechanism of issue 14 on every backend
// that runs pods on this testbed's kubelet (the docker backend's pod shape
// is the same podspec code, unit-tested in pkg/podspec; its pods need a
// Docker node, realk8s.md): a script-only template's pod has no init
// container, main runs the script from the annotation projected by the
// downward API (input parameters substituted, shell metacharacters intact),
// and wait reports its stdout. What that saves at pod start is
// TestScriptStartLatency's figure (build tag bench).
//
//	ARGOEXEC_E2E_SKIP_UP=1 hack/e2e.sh -run TestScriptWithoutInit
func TestScriptWithoutInit(t *testing.T) {
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
		t.Run(backend, func(t *testing.T) {
			e := newWfEnv(t, backend)
			r := e.run(t, "script-only", e.scriptOnly("script-only"), nil, false)
			if n := len(r.pod.Spec.InitContainers); n != 0 {
				t.Errorf("the script-only pod has %d init containers, want none", n)
			}
			if r.pod.Status.Phase != corev1.PodSucceeded || r.outputs == nil || r.outputs.Result == nil {
				t.Fatalf("phase %s, outputs %+v", r.pod.Status.Phase, r.outputs)
			}
			lines := strings.Split(*r.outputs.Result, "\n")
			if len(lines) != 2 || lines[1] != "hello world <&>" {
				t.Fatalf("result %q, want the uptime and \"hello world <&>\"", *r.outputs.Result)
			}
		})
	}
}
