//go:build e2e

package e2e

import (
	"testing"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// An http input artifact under Argo's controller (issue 22): Argo's input-artifact-http example
// downloads from the Internet, so this case loads from the test's local HTTP server
// (argoHTTPServer, on the node's IP) with a header, and prints what it got; both images compared.
func init() {
	argoCases = append(argoCases, argoCase{example: "http-input", manifest: argoHTTPInputWorkflow, wantPhase: "Succeeded",
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
