//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// An http input artifact under Argo's controller (issue 22): Argo's input-artifact-http example
// downloads from the Internet, so this case loads from the test's local HTTP server
// (argoHTTPServer, on the node's IP) with a header, and prints what it got.
func init() {
	argoCases = append(argoCases, argoCase{example: "http-input", manifest: argoHTTPInputWorkflow, wantPhase: "Succeeded",
		upstreamDiffers: "Argo v3.3.8's http driver runs the curl program, which the testbed's image of Argo's argoexec lacks (as it lacks git)",
		upstreamCheck: func(t *testing.T, o *framework.WorkflowOutcome) {
			n := mustNode(t, o, "WF", "Error")
			if want := `artifact swagger failed to load: exec: "curl": executable file not found`; !strings.Contains(n.Message, want) {
				t.Errorf("Argo's own argoexec: node message %q has no %q", n.Message, want)
			}
		},
		check: func(t *testing.T, o *framework.WorkflowOutcome) {
			n := mustNode(t, o, "WF", "Succeeded")
			if want := swaggerStandIn + "\nGET  token=t0k\n"; n.MainLog != want {
				t.Errorf("main printed %q, want the two downloads %q", n.MainLog, want)
			}
		}})
}

// argoHTTPInputWorkflow: two http inputs from the local server: a plain download, and /echo,
// which answers with the method and the X-Token header the artifact sends.
const argoHTTPInputWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: http-input-
spec:
  entrypoint: main
  templates:
  - name: main
    inputs:
      artifacts:
      - name: swagger
        path: /in/swagger.json
        http: {url: "@HTTP_URL@/raw/swagger.json"}
      - name: echo
        path: /in/echo
        http:
          url: "@HTTP_URL@/echo"
          headers: [{name: X-Token, value: t0k}]
    container:
      image: alpine:3.7
      command: [sh, -c, "cat /in/swagger.json; echo; cat /in/echo; echo"]
`
