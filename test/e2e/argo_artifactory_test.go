//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The argo tier's artifactory cases (issue 22): outputs stored in, and inputs loaded from, the
// WebDAV server TestArgo starts (argoWebDAV), with basic auth from usernameSecret and
// passwordSecret; and the errors of a missing file, a wrong password and a server that is not
// there, with our image.
func init() {
	argoCases = append(argoCases,
		argoCase{example: "artifactory", webdav: true, setup: argoStoreSecrets, manifest: argoArtifactoryWorkflow, wantPhase: "Succeeded", check: artifactoryCheck},
		// A directory with archive: none: an Artifactory URL holds one file, so ours refuses it
		// in wait, saying to archive it.
		argoCase{example: "artifactory-directory", webdav: true, setup: argoStoreSecrets, manifest: argoArtifactoryDirectoryWorkflow, wantPhase: "Failed",
			upstreamDiffers: "Argo's own argoexec fails it too, with its own message",
			upstreamCheck: func(t *testing.T, o *framework.WorkflowOutcome) {
				if n := mustNode(t, o, "produce", "Error"); !strings.Contains(n.Message, ": is a directory") {
					t.Errorf("Argo's own argoexec: produce's message %q has no %q", n.Message, ": is a directory")
				}
			},
			check: func(t *testing.T, o *framework.WorkflowOutcome) {
				n := mustNode(t, o, "produce", "Error")
				for _, w := range []string{`output artifact "tree" (/work/tree): artifactory: artifact "tree": not supported: it is a directory, and an Artifactory URL holds one file; archive it (drop ` + "`archive: none`)"} {
					if !strings.Contains(n.Message, w) {
						t.Errorf("produce's message %q has no %q", n.Message, w)
					}
				}
				t.Logf("ours: produce: %s", n.Message)
			}},
		argoCase{example: "artifactory-errors", webdav: true, setup: argoStoreSecrets, manifest: argoArtifactoryErrorsWorkflow, wantPhase: "Succeeded",
			upstreamDiffers: "the case judges our error messages; Argo's own argoexec's are logged",
			check:           artifactoryErrorsCheck},
	)
}

// webdavSecrets are an artifactory location's secrets, from the Secret name (argoStoreSecrets
// makes them), as the tail of a YAML flow mapping.
func webdavSecrets(name string) string {
	return ", usernameSecret: {name: " + name + ", key: user}, passwordSecret: {name: " + name + ", key: password}"
}

// argoArtifactoryWorkflow: produce stores two outputs in the WebDAV server: a tarball at a URL
// of its own, and a file with archive: none at the URL its template's archiveLocation.artifactory
// gives (URL/BASENAME, as Argo's executor locates it); consume loads the first from its URL as
// written in its own inputs, and the second passed with from:, and prints both.
var argoArtifactoryWorkflow = strings.ReplaceAll(`apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: artifactory-
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: produce
        template: produce
    - - name: consume
        template: consume
        arguments:
          artifacts:
          - name: plain
            from: "{{steps.produce.outputs.artifacts.plain}}"
  - name: produce
    archiveLocation:
      artifactory: {url: "@WEBDAV_URL@/generic/{{workflow.name}}/produce"@SECRETS@}
    volumes:
    - name: work
      emptyDir: {}
    container:
      image: alpine:3.7
      command: [sh, -c]
      args: ["echo hello artifactory > /work/hello.txt && printf 'plain\nfile\n' > /work/plain.txt"]
      volumeMounts:
      - {name: work, mountPath: /work}
    outputs:
      artifacts:
      - name: hello
        path: /work/hello.txt
        artifactory: {url: "@WEBDAV_URL@/generic/{{workflow.name}}/hello.tgz"@SECRETS@}
      - name: plain
        path: /work/plain.txt
        archive: {none: {}}
  - name: consume
    archiveLocation:
      artifactory: {url: "@WEBDAV_URL@/generic/{{workflow.name}}/consume"@SECRETS@}
    inputs:
      artifacts:
      - name: hello
        path: /in/hello.txt
        artifactory: {url: "@WEBDAV_URL@/generic/{{workflow.name}}/hello.tgz"@SECRETS@}
      - name: plain
        path: /in/plain.txt
    container:
      image: alpine:3.7
      command: [sh, -c]
      args: ["cat /in/hello.txt /in/plain.txt"]
`, "@SECRETS@", webdavSecrets(argoWebDAVSecret))

// argoArtifactoryDirectoryWorkflow is argoS3DirectoryWorkflow with the tree bound for the WebDAV
// server.
var argoArtifactoryDirectoryWorkflow = strings.NewReplacer(
	"generateName: s3-directory-", "generateName: artifactory-directory-",
	"        archive: {none: {}}\n", "        archive: {none: {}}\n        artifactory: {url: \"@WEBDAV_URL@/generic/{{workflow.name}}/tree\""+webdavSecrets(argoWebDAVSecret)+"}\n",
).Replace(argoS3DirectoryWorkflow)

func artifactoryCheck(t *testing.T, o *framework.WorkflowOutcome) {
	n := mustNode(t, o, "produce", "Succeeded")
	if got := n.Artifacts["hello"]; len(got) != 1 || got["hello.txt"] != "hello artifactory\n" {
		t.Errorf("artifact hello in the WebDAV server: %v, want a tarball of hello.txt = %q", got, "hello artifactory\n")
	}
	if want := "/generic/" + o.Name + "/hello.tgz"; n.ArtifactKeys["hello"] != want {
		t.Errorf("artifact hello at %q, want its own url's path %q", n.ArtifactKeys["hello"], want)
	}
	if got := n.Artifacts["plain"][""]; got != "plain\nfile\n" {
		t.Errorf("artifact plain in the WebDAV server (archive: none): %q, want %q (files %v)", got, "plain\nfile\n", keys(n.Artifacts["plain"]))
	}
	if want := "/generic/" + o.Name + "/produce/plain.txt"; n.ArtifactKeys["plain"] != want {
		t.Errorf("artifact plain at %q, want the archiveLocation's URL/BASENAME (archive: none), %q", n.ArtifactKeys["plain"], want)
	}
	if got, want := mustNode(t, o, "consume", "Succeeded").MainLog, "hello artifactory\nplain\nfile\n"; got != want {
		t.Errorf("consume printed %q, want %q", got, want)
	}
}

// argoArtifactoryErrorsWorkflow: three steps, each with an input that cannot be loaded: a file
// the server does not have, the right user with a wrong password, and a port of the node nothing
// listens on. Each step fails in init and the workflow goes on (continueOn).
var argoArtifactoryErrorsWorkflow = strings.NewReplacer("@SECRETS@", webdavSecrets(argoWebDAVSecret),
	"@BAD_SECRETS@", webdavSecrets(argoWebDAVBadSecret)).Replace(`apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: artifactory-errors-
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: missing
        template: load
        continueOn: {failed: true, error: true}
        arguments:
          artifacts:
          - name: in
            artifactory: {url: "@WEBDAV_URL@/generic/{{workflow.name}}/no-such.tgz"@SECRETS@}
      - name: bad-password
        template: load
        continueOn: {failed: true, error: true}
        arguments:
          artifacts:
          - name: in
            artifactory: {url: "@WEBDAV_URL@/generic/{{workflow.name}}/any.tgz"@BAD_SECRETS@}
      - name: unreachable
        template: load
        continueOn: {failed: true, error: true}
        arguments:
          artifacts:
          - name: in
            artifactory: {url: "http://@NODE_IP@:1/generic/{{workflow.name}}/any.tgz"@SECRETS@}
  - name: load
    inputs:
      artifacts:
      - name: in
        path: /in/file
    container:
      image: alpine:3.7
      command: [cat, /in/file]
`)

// artifactoryErrorsCheck: each step failed before main ran, with a message naming the artifact,
// the store and the URL, and saying what to check.
func artifactoryErrorsCheck(t *testing.T, o *framework.WorkflowOutcome) {
	for _, tc := range []struct {
		step string
		want []string
	}{
		{"missing", []string{"no-such.tgz", "404 Not Found", "check the url, and that the step that should have stored it succeeded"}},
		{"bad-password", []string{"any.tgz", "401 Unauthorized", "credentials refused: check the secrets named by usernameSecret and passwordSecret"}},
		{"unreachable", []string{":1/generic/", "the server did not answer", "is it up and reachable from the pod"}},
	} {
		n := o.Node(tc.step)
		if n == nil {
			t.Errorf("no node %s", tc.step)
			continue
		}
		if n.Phase != "Error" {
			t.Errorf("%s: phase %s, want Error (init failed)", tc.step, n.Phase)
		}
		for _, w := range append([]string{`input artifact "in"`, "artifactory: GET"}, tc.want...) {
			if !strings.Contains(n.Message, w) {
				t.Errorf("%s: node message %q has no %q", tc.step, n.Message, w)
			}
		}
		if n.MainLog != "" {
			t.Errorf("%s: main ran and printed %q; want the step stopped in init", tc.step, n.MainLog)
		}
		t.Logf("ours: %s: %s", tc.step, n.Message)
	}
}
