//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// argoNodeWorkflow: one script step pinned to a node (the workflow tolerates the second node's
// taint) that writes where it ran to an emptyDir, reported as an output parameter and an output
// artifact (the controller's S3 repository). Its result is not asked for: Argo's controller has
// the executor capture it only when another step refers to it (INCLUDE_SCRIPT_OUTPUT).
const argoNodeWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: on-node-
spec:
  entrypoint: main
  tolerations: [{key: %s, operator: Exists, effect: NoSchedule}]
  templates:
  - name: main
    nodeSelector: {kubernetes.io/hostname: %s}
    volumes: [{name: work, emptyDir: {}}]
    outputs:
      parameters: [{name: where, valueFrom: {path: /work/where}}]
      artifacts: [{name: where, path: /work/where}]
    script:
      image: alpine:3.7
      command: [sh]
      volumeMounts: [{name: work, mountPath: /work}]
      env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
      source: |
        echo "on $NODE" > /work/where
        echo "result from $NODE"
`

// TestArgoTwoNodes runs, under Argo v3.3.8's controller, a step pinned to each node with each
// executor image that ARGOEXEC_E2E_ARGO_IMAGES names, on each backend: the pod must run on that
// node and report the same outputs with Argo's image and ours (Argo's kubelet executor, like
// ours, reaches its own node's kubelet at status.hostIP).
func TestArgoTwoNodes(t *testing.T) {
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		t.Fatal(err)
	}
	nodes := testbedNodes(t, framework.New(t))
	runLabel := "argo-nodes-" + randHex(t)
	got := map[string]map[string]string{} // backend/node -> controller -> outcome
	for _, c := range ctrls {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		a, err := framework.NewArgo(ctx, c, runLabel)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = a.DeleteRun(ctx)
		})
		for _, backend := range argoBackends() {
			for _, node := range nodes {
				key := backend + "/" + node.Name
				t.Run(key+"/"+c.Name, func(t *testing.T) {
					wf, err := framework.ParseWorkflow(fmt.Appendf(nil, argoNodeWorkflow, secondNodeTaint, node.Name))
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
					defer cancel()
					created, err := a.Submit(ctx, wf, backend)
					if err != nil {
						t.Fatal(err)
					}
					final, err := a.WaitForWorkflow(ctx, created.GetName())
					if err != nil {
						t.Fatal(err)
					}
					o, err := a.Collect(ctx, final)
					if err != nil {
						t.Error(err)
					}
					n := mustNode(t, o, "WF", "Succeeded")
					pods, err := a.WorkflowPods(ctx, created.GetName())
					if err != nil {
						t.Fatal(err)
					}
					if len(pods) != 1 || pods[0].Spec.NodeName != node.Name || pods[0].Status.HostIP != node.IP {
						for _, p := range pods {
							t.Errorf("pod %s ran on %q (host IP %s), want %s (%s)", p.Name, p.Spec.NodeName, p.Status.HostIP, node.Name, node.IP)
						}
						if len(pods) != 1 {
							t.Errorf("%d pods, want 1", len(pods))
						}
					}
					if w := n.Parameters["where"]; w != "on "+node.Name {
						t.Errorf("output parameter where = %q, want %q", w, "on "+node.Name)
					}
					if f := n.Artifacts["where"]["where"]; f != "on "+node.Name+"\n" {
						t.Errorf("artifact where holds %q (archive %v), want %q", f, n.Artifacts["where"], "on "+node.Name+"\n")
					}
					if t.Failed() {
						t.Log(a.Describe(context.Background(), o))
					}
					if got[key] == nil {
						got[key] = map[string]string{}
					}
					got[key][c.Name] = strings.Join([]string{n.Phase, n.Parameters["where"], fmt.Sprint(n.Artifacts["where"])}, " | ")
				})
			}
		}
	}
	for key, by := range got {
		if up, ok := by["upstream"]; ok {
			if ours, ok := by["ours"]; ok && ours != up {
				t.Errorf("%s: Argo's own argoexec gave %q, ours %q", key, up, ours)
			}
		}
	}
}
