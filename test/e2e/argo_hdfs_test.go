//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// hdfs under Argo's controller (issue 22): no HDFS server can be run here, so ours has no hdfs
// store and refuses an hdfs input in init, before main runs, naming the artifact and what to use
// instead; Argo's own argoexec's outcome (its driver against a port nothing listens on) is logged.
func init() {
	argoCases = append(argoCases, argoCase{example: "hdfs-refused", manifest: argoHDFSWorkflow, wantPhase: "Error",
		upstreamDiffers: "Argo's own argoexec has an hdfs driver; against no server it fails otherwise",
		check: func(t *testing.T, o *framework.WorkflowOutcome) {
			n := o.Node("WF")
			if n == nil {
				t.Fatalf("no node in %s", o.Name)
			}
			if n.Phase != "Error" {
				t.Errorf("node phase %s, want Error (init failed)", n.Phase)
			}
			for _, w := range []string{`input artifact "data": not supported: argoexec has no hdfs store`, "store the artifact in an S3-compatible bucket instead"} {
				if !strings.Contains(n.Message, w) {
					t.Errorf("node message %q has no %q", n.Message, w)
				}
			}
			if n.MainLog != "" {
				t.Errorf("main ran and printed %q; want the step stopped in init", n.MainLog)
			}
		}})
}

const argoHDFSWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: hdfs-refused-
spec:
  entrypoint: main
  templates:
  - name: main
    inputs:
      artifacts:
      - name: data
        path: /in/data
        hdfs: {addresses: ["@NODE_IP@:1"], path: /argoexec-e2e/data, hdfsUser: root}
    container:
      image: alpine:3.7
      command: [cat, /in/data]
`
