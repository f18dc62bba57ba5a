//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The argo tier's artifact-store cases (issue 22), each a workflow of its own (not one of Argo's
// examples) run with both images side by side like the examples.
func init() {
	argoCases = append(argoCases,
		argoCase{example: "s3-directory", manifest: argoS3DirectoryWorkflow, wantPhase: "Succeeded", check: s3DirectoryCheck},
		// The same from main's own filesystem, which only emissary reads.
		argoCase{example: "s3-directory-image", only: "emissary", manifest: argoS3DirectoryImageWorkflow, wantPhase: "Succeeded", check: s3DirectoryCheck},
		// Argo's own example: archiveLocation.archiveLogs on the template.
		argoCase{example: "archive-location", wantPhase: "Succeeded", check: archiveLogsCheck},
		// gcs, against the testbed's GCS emulator (fake-gcs-server), which init and wait of both
		// images reach through STORAGE_EMULATOR_HOST (Argo's pins cloud.google.com/go/storage
		// v1.20.0, which reads it too).
		argoCase{example: "gcs-file", gcs: true, manifest: argoGCSFileWorkflow, wantPhase: "Succeeded", check: gcsFileCheck},
		argoCase{example: "gcs-directory", gcs: true, manifest: argoGCSDirectoryWorkflow, wantPhase: "Succeeded", check: gcsDirectoryCheck},
	)
}

// argoGCSBucket is the GCS emulator's bucket the gcs cases store in.
const argoGCSBucket = "argoexec-e2e"

// gcsEnvPatch and gcsInitEnvPatch are podSpecPatches that point wait (and init, which a step has
// only with inputs on the exec backends) at the GCS emulator.
const (
	gcsEnvPatch     = `'{"containers":[{"name":"wait","env":[{"name":"STORAGE_EMULATOR_HOST","value":"@GCS_HOST@"}]}]}'`
	gcsInitEnvPatch = `'{"initContainers":[{"name":"init","env":[{"name":"STORAGE_EMULATOR_HOST","value":"@GCS_HOST@"}]}],"containers":[{"name":"wait","env":[{"name":"STORAGE_EMULATOR_HOST","value":"@GCS_HOST@"}]}]}'`
)

// argoGCSFileWorkflow: produce stores two outputs in gcs: a tarball at a key of its own, and a
// file with archive: none at the key the template's archiveLocation.gcs gives (KEY/BASENAME, as
// Argo's executor locates it); consume loads the first from its gcs location as written in its
// own inputs, and the second passed with from:, and prints both. Argo's controller passes the
// second as a key alone, which both images relocate onto consume's own archiveLocation (without
// one, the default repository's: S3).
const argoGCSFileWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: gcs-file-
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
      gcs:
        bucket: ` + argoGCSBucket + `
        key: "{{workflow.name}}/produce"
    podSpecPatch: ` + gcsEnvPatch + `
    volumes:
    - name: work
      emptyDir: {}
    container:
      image: alpine:3.7
      command: [sh, -c]
      args: ["echo hello gcs > /work/hello.txt && printf 'plain\nfile\n' > /work/plain.txt"]
      volumeMounts:
      - {name: work, mountPath: /work}
    outputs:
      artifacts:
      - name: hello
        path: /work/hello.txt
        gcs:
          bucket: ` + argoGCSBucket + `
          key: "{{workflow.name}}/hello.tgz"
      - name: plain
        path: /work/plain.txt
        archive: {none: {}}
  - name: consume
    archiveLocation:
      gcs:
        bucket: ` + argoGCSBucket + `
        key: "{{workflow.name}}/consume"
    podSpecPatch: ` + gcsInitEnvPatch + `
    inputs:
      artifacts:
      - name: hello
        path: /in/hello.txt
        gcs:
          bucket: ` + argoGCSBucket + `
          key: "{{workflow.name}}/hello.tgz"
      - name: plain
        path: /in/plain.txt
    container:
      image: alpine:3.7
      command: [sh, -c]
      args: ["cat /in/hello.txt /in/plain.txt"]
`

func gcsFileCheck(t *testing.T, o *framework.WorkflowOutcome) {
	n := mustNode(t, o, "produce", "Succeeded")
	if got := n.Artifacts["hello"]; len(got) != 1 || got["hello.txt"] != "hello gcs\n" {
		t.Errorf("artifact hello in GCS: %v, want a tarball of hello.txt = %q", got, "hello gcs\n")
	}
	if got := n.Artifacts["plain"][""]; got != "plain\nfile\n" {
		t.Errorf("artifact plain in GCS (archive: none): %q, want %q (files %v)", got, "plain\nfile\n", keys(n.Artifacts["plain"]))
	}
	if want := o.Name + "/produce/plain.txt"; n.ArtifactKeys["plain"] != want {
		t.Errorf("artifact plain at key %q, want the archiveLocation's KEY/BASENAME (archive: none), %q", n.ArtifactKeys["plain"], want)
	}
	if got, want := mustNode(t, o, "consume", "Succeeded").MainLog, "hello gcs\nplain\nfile\n"; got != want {
		t.Errorf("consume printed %q, want %q", got, want)
	}
}

// argoGCSDirectoryWorkflow is argoS3DirectoryWorkflow with the tree stored in gcs at a key of its
// own: Argo v3.3.8's GCS driver stores each file under KEY/ and, unlike its S3 driver, the
// symlink as the content of the file it points to; the input loads the tree back from the key
// as a prefix.
var argoGCSDirectoryWorkflow = strings.NewReplacer(
	"generateName: s3-directory-", "generateName: gcs-directory-",
	"  - name: produce\n    volumes:", "  - name: produce\n    podSpecPatch: "+gcsEnvPatch+"\n    volumes:",
	"  - name: consume\n    inputs:", "  - name: consume\n    podSpecPatch: "+gcsInitEnvPatch+"\n    inputs:",
	"        archive: {none: {}}\n", "        archive: {none: {}}\n        gcs: {bucket: "+argoGCSBucket+", key: \"{{workflow.name}}/tree\"}\n",
).Replace(argoS3DirectoryWorkflow)

func gcsDirectoryCheck(t *testing.T, o *framework.WorkflowOutcome) {
	files := mustNode(t, o, "produce", "Succeeded").Artifacts["tree"]
	want := map[string]string{"dir:a.txt": "one\n", "dir:link": "one\n", "dir:sub/b.txt": "two\nlines\n", "dir:sub/deeper/empty": ""}
	if len(files) != len(want) {
		t.Errorf("artifact tree in GCS: %v, want the keys %v (the symlink as its target's content)", keys(files), keys(want))
	}
	for k, v := range want {
		if got, ok := files[k]; !ok || got != v {
			t.Errorf("artifact tree: %s = %q (stored %v), want %q", k, got, ok, v)
		}
	}
	wantLog := "== ./a.txt\none\n== ./link\none\n== ./sub/b.txt\ntwo\nlines\n== ./sub/deeper/empty\n"
	if got := mustNode(t, o, "consume", "Succeeded").MainLog; got != wantLog {
		t.Errorf("consume printed %q, want %q", got, wantLog)
	}
}

// argoS3DirectoryWorkflow: produce writes a directory (files, a subdirectory, an empty file and a
// symlink) on an emptyDir and outputs it with `archive: none`, which Argo v3.3.8's S3 driver
// stores file by file under KEY/ (PutDirectory; the symlink is not stored); consume takes it as
// an input, which Argo's driver loads as that tree because the key has no object of its own
// (IsDirectory, GetDirectory), and prints what it got.
const argoS3DirectoryWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: s3-directory-
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
          - name: tree
            from: "{{steps.produce.outputs.artifacts.tree}}"
  - name: produce
    volumes:
    - name: work
      emptyDir: {}
    container:
      image: alpine:3.7
      command: [sh, -c]
      args:
      - |
        mkdir -p /work/tree/sub/deeper && echo one > /work/tree/a.txt && printf 'two\nlines\n' > /work/tree/sub/b.txt
        touch /work/tree/sub/deeper/empty && ln -s a.txt /work/tree/link
      volumeMounts:
      - {name: work, mountPath: /work}
    outputs:
      artifacts:
      - name: tree
        path: /work/tree
        archive: {none: {}}
  - name: consume
    inputs:
      artifacts:
      - name: tree
        path: /in/tree
    container:
      image: alpine:3.7
      command: [sh, -c]
      args:
      - |
        cd /in/tree && for f in $(find . -type f -o -type l | sort); do echo "== $f"; cat $f; done
`

// argoS3DirectoryImageWorkflow is argoS3DirectoryWorkflow with the directory in main's own
// filesystem, not on a volume.
var argoS3DirectoryImageWorkflow = strings.NewReplacer(
	"generateName: s3-directory-", "generateName: s3-directory-image-",
	"    volumes:\n    - name: work\n      emptyDir: {}\n", "",
	"      volumeMounts:\n      - {name: work, mountPath: /work}\n", "",
).Replace(argoS3DirectoryWorkflow)

func s3DirectoryCheck(t *testing.T, o *framework.WorkflowOutcome) {
	files := mustNode(t, o, "produce", "Succeeded").Artifacts["tree"]
	want := map[string]string{"dir:a.txt": "one\n", "dir:sub/b.txt": "two\nlines\n", "dir:sub/deeper/empty": ""}
	if len(files) != len(want) {
		t.Errorf("artifact tree in S3: %v, want the keys %v (no symlink, no directory objects)", keys(files), keys(want))
	}
	for k, v := range want {
		if got, ok := files[k]; !ok || got != v {
			t.Errorf("artifact tree: %s = %q (stored %v), want %q", k, got, ok, v)
		}
	}
	wantLog := "== ./a.txt\none\n== ./sub/b.txt\ntwo\nlines\n== ./sub/deeper/empty\n"
	if got := mustNode(t, o, "consume", "Succeeded").MainLog; got != wantLog {
		t.Errorf("consume printed %q, want %q", got, wantLog)
	}
}

// archiveLogsCheck: main's log is stored as the object ARCHIVE-KEY/main.log, the workflow's key
// format being {{workflow.name}}/{{pod.name}}, and reported as the artifact main-logs.
func archiveLogsCheck(t *testing.T, o *framework.WorkflowOutcome) {
	n := mustNode(t, o, "WF", "Succeeded")
	wantLogContains(t, n, "hello world")
	if want := o.Name + "/" + o.Name + "/main.log"; n.ArtifactKeys["main-logs"] != want {
		t.Errorf("main-logs reported at key %q, want %q (artifacts %v)", n.ArtifactKeys["main-logs"], want, n.ArtifactKeys)
	}
	// On k8sapi and kubelet the stored log is main's pods/log; on emissary it is the wrapper's
	// capture of main's command, which pods/log shows amid the wrapper's own lines.
	if got := n.Artifacts["main-logs"][""]; !strings.Contains(got, "hello world") || !strings.Contains(n.MainLog, got) {
		t.Errorf("main-logs in S3 holds %q, want main's output as its log %q shows it", got, n.MainLog)
	}
}
