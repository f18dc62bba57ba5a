//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The argo tier's oss cases (issue 22), against the testbed's S3 (versitygw) as the OSS
// endpoint: ours reaches OSS through its S3-compatible API (pkg/artifacts/oss.go); Argo's own
// argoexec through Aliyun's OSS SDK.
func init() {
	argoCases = append(argoCases,
		argoCase{example: "oss", setup: argoStoreSecrets, manifest: argoOSSWorkflow, wantPhase: "Succeeded", check: ossCheck,
			upstreamDiffers: "Argo's own argoexec signs with Aliyun's OSS signature (aliyun-oss-go-sdk v2.2.1: `Authorization: OSS KEY:SIGNATURE` and a Date header), " +
				"which an S3 server that takes only AWS Signature V4 (versitygw reads x-amz-date) refuses with 403 AccessDenied: its wait fails to save produce's output",
			upstreamCheck: ossUpstreamCheck},
		// A directory with archive: none, stored as the S3 driver lays one out (each file under
		// KEY/; Argo's OSS driver's layout, which it also reads), loaded back as a tree.
		argoCase{example: "oss-directory", setup: argoStoreSecrets, manifest: argoOSSDirectoryWorkflow, wantPhase: "Succeeded", check: s3DirectoryCheck,
			upstreamDiffers: "as in the oss case, Argo's own argoexec's OSS signature is refused by the S3 server",
			upstreamCheck:   ossUpstreamCheck},
		argoCase{example: "oss-errors", setup: argoStoreSecrets, manifest: argoOSSErrorsWorkflow, wantPhase: "Succeeded",
			upstreamDiffers: "the case judges our error messages; Argo's own argoexec's are logged",
			check:           ossErrorsCheck},
	)
}

// ossLocation is the tail of an oss location's YAML flow mapping: the testbed's S3 as the
// endpoint, the repository's bucket, and the keys of the Secret name.
func ossLocation(endpoint, secret string) string {
	return "endpoint: " + endpoint + ", bucket: @S3_BUCKET@, accessKeySecret: {name: " + secret + ", key: accesskey}, secretKeySecret: {name: " + secret + ", key: secretkey}"
}

// argoOSSWorkflow is argoGCSFileWorkflow's shape in oss: a tarball at a key of its own, and a
// file with archive: none at the template's archiveLocation.oss key (KEY/BASENAME), loaded back
// by consume, the second passed with from:.
var argoOSSWorkflow = strings.ReplaceAll(`apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: oss-
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
      oss: {key: "{{workflow.name}}/produce", @LOC@}
    volumes:
    - name: work
      emptyDir: {}
    container:
      image: alpine:3.7
      command: [sh, -c]
      args: ["echo hello oss > /work/hello.txt && printf 'plain\nfile\n' > /work/plain.txt"]
      volumeMounts:
      - {name: work, mountPath: /work}
    outputs:
      artifacts:
      - name: hello
        path: /work/hello.txt
        oss: {key: "{{workflow.name}}/hello.tgz", @LOC@}
      - name: plain
        path: /work/plain.txt
        archive: {none: {}}
  - name: consume
    archiveLocation:
      oss: {key: "{{workflow.name}}/consume", @LOC@}
    inputs:
      artifacts:
      - name: hello
        path: /in/hello.txt
        oss: {key: "{{workflow.name}}/hello.tgz", @LOC@}
      - name: plain
        path: /in/plain.txt
    container:
      image: alpine:3.7
      command: [sh, -c]
      args: ["cat /in/hello.txt /in/plain.txt"]
`, "@LOC@", ossLocation("http://@S3_HOST@", "argo-s3"))

// argoOSSDirectoryWorkflow is argoS3DirectoryWorkflow with the tree stored in oss at a key of its
// own.
var argoOSSDirectoryWorkflow = strings.NewReplacer(
	"generateName: s3-directory-", "generateName: oss-directory-",
	"        archive: {none: {}}\n", "        archive: {none: {}}\n        oss: {key: \"{{workflow.name}}/tree\", "+ossLocation("http://@S3_HOST@", "argo-s3")+"}\n",
).Replace(argoS3DirectoryWorkflow)

func ossCheck(t *testing.T, o *framework.WorkflowOutcome) {
	n := mustNode(t, o, "produce", "Succeeded")
	if got := n.Artifacts["hello"]; len(got) != 1 || got["hello.txt"] != "hello oss\n" {
		t.Errorf("artifact hello in S3 (oss): %v, want a tarball of hello.txt = %q", got, "hello oss\n")
	}
	if got := n.Artifacts["plain"][""]; got != "plain\nfile\n" {
		t.Errorf("artifact plain in S3 (oss, archive: none): %q, want %q (files %v)", got, "plain\nfile\n", keys(n.Artifacts["plain"]))
	}
	if want := o.Name + "/produce/plain.txt"; n.ArtifactKeys["plain"] != want {
		t.Errorf("artifact plain at key %q, want the archiveLocation's KEY/BASENAME (archive: none), %q", n.ArtifactKeys["plain"], want)
	}
	if got, want := mustNode(t, o, "consume", "Succeeded").MainLog, "hello oss\nplain\nfile\n"; got != want {
		t.Errorf("consume printed %q, want %q", got, want)
	}
}

// ossUpstreamCheck pins how Argo's own argoexec fails the oss case against the testbed's S3:
// produce's main ran, its wait's save was refused (403 AccessDenied, the server wanting AWS's
// x-amz-date), nothing is stored, and consume never ran.
func ossUpstreamCheck(t *testing.T, o *framework.WorkflowOutcome) {
	if o.Phase != "Failed" {
		t.Errorf("Argo's own argoexec: workflow %s, want Failed", o.Phase)
	}
	n := mustNode(t, o, "produce", "Error")
	for _, w := range []string{"oss: service returned error: StatusCode=403, ErrorCode=AccessDenied", "x-amz-date"} {
		if !strings.Contains(n.Message, w) {
			t.Errorf("Argo's own argoexec: produce's message %q has no %q", n.Message, w)
		}
	}
	if len(n.Artifacts) != 0 {
		t.Errorf("Argo's own argoexec: produce's outputs %v are in S3 although its save failed", keysMap(n.Artifacts))
	}
	if o.Node("consume") != nil {
		t.Errorf("Argo's own argoexec: consume ran after produce failed")
	}
}

// argoOSSErrorsWorkflow: three steps, each with an oss input that cannot be loaded: a key with no
// object (and none under it), keys the server does not know, and a port of the node nothing
// listens on.
var argoOSSErrorsWorkflow = strings.NewReplacer(
	"@LOC@", ossLocation("http://@S3_HOST@", "argo-s3"),
	"@BAD_LOC@", ossLocation("http://@S3_HOST@", argoS3BadSecret),
	"@DOWN_LOC@", ossLocation("http://@NODE_IP@:1", "argo-s3"),
).Replace(`apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: oss-errors-
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
            oss: {key: "{{workflow.name}}/no-such.tgz", @LOC@}
      - name: bad-keys
        template: load
        continueOn: {failed: true, error: true}
        arguments:
          artifacts:
          - name: in
            oss: {key: "{{workflow.name}}/any.tgz", @BAD_LOC@}
      - name: unreachable
        template: load
        continueOn: {failed: true, error: true}
        arguments:
          artifacts:
          - name: in
            oss: {key: "{{workflow.name}}/any.tgz", @DOWN_LOC@}
  - name: load
    inputs:
      artifacts:
      - name: in
        path: /in/file
    container:
      image: alpine:3.7
      command: [cat, /in/file]
`)

// ossErrorsCheck: each step failed before main ran, with a message naming the artifact, the
// store and the object, and saying what to check, in oss's own fields.
func ossErrorsCheck(t *testing.T, o *framework.WorkflowOutcome) {
	for _, tc := range []struct {
		step string
		want []string
	}{
		{"missing", []string{"no-such.tgz", "object not found", "check the key, and that the step that should have stored it succeeded"}},
		{"bad-keys", []string{"any.tgz", "credentials refused; check the secrets named by accessKeySecret and secretKeySecret", "oss"}},
		{"unreachable", []string{":1", "did not answer", "is it up and reachable from the pod"}},
	} {
		n := o.Node(tc.step)
		if n == nil {
			t.Errorf("no node %s", tc.step)
			continue
		}
		if n.Phase != "Error" {
			t.Errorf("%s: phase %s, want Error (init failed)", tc.step, n.Phase)
		}
		for _, w := range append([]string{`input artifact "in"`, "oss (through its S3-compatible API)"}, tc.want...) {
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

func keysMap[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
