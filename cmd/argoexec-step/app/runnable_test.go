package app

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestRenderRefusesPodsThatCannotRun: render exits 2, naming what to set,
// for a pod that would be created and then fail: artifacts with no
// repository (the shipped examples with the shipped ConfigMap, which has
// none), a container with no image, a namespace that is not a name.
func TestRenderRefusesPodsThatCannotRun(t *testing.T) {
	shipped := filepath.Join("..", "..", "..", "manifests", "base", "configmap.yaml")
	withRepo := writeFile(t, "repo.yaml", "containerRuntimeExecutor: k8sapi\nartifactRepository:\n  s3: {endpoint: 's3:7070', bucket: b}\n")
	for _, tc := range []struct {
		name, template, configmap string
		extra                     []string
		want                      string // empty: renders
	}{
		{"output artifact, shipped ConfigMap", filepath.Join(examples, "artifact-produce.yaml"), shipped, nil,
			"output artifact data: no artifact repository to upload it to: set artifactRepository.s3 (or gcs, artifactory or oss) in the ConfigMap"},
		{"input artifact, shipped ConfigMap", filepath.Join(examples, "artifact-consume.yaml"), shipped, nil,
			"input artifact data: no artifact repository to download it from"},
		{"output artifact with a repository", filepath.Join(examples, "artifact-produce.yaml"), withRepo, nil, ""},
		{"artifact with its own bucket", writeFile(t, "own.yaml", "name: x\nvolumes: [{name: w, emptyDir: {}}]\ncontainer: {image: a, volumeMounts: [{name: w, mountPath: /w}]}\noutputs: {artifacts: [{name: o, path: /w/o, s3: {endpoint: 'e:1', bucket: b, key: k}}]}\n"), shipped, nil, ""},
		{"output artifact with an artifactory repository", filepath.Join(examples, "artifact-produce.yaml"),
			writeFile(t, "rt.yaml", "artifactRepository:\n  artifactory: {repoURL: 'http://rt/generic'}\n"), nil, ""},
		{"artifactory output with its own URL", writeFile(t, "ownrt.yaml", "name: x\nvolumes: [{name: w, emptyDir: {}}]\ncontainer: {image: a, volumeMounts: [{name: w, mountPath: /w}]}\noutputs: {artifacts: [{name: o, path: /w/o, artifactory: {url: 'http://rt/generic/o'}}]}\n"), shipped, nil, ""},
		{"oss output without endpoint, no repository", writeFile(t, "oss.yaml", "name: x\nvolumes: [{name: w, emptyDir: {}}]\ncontainer: {image: a, volumeMounts: [{name: w, mountPath: /w}]}\noutputs: {artifacts: [{name: o, path: /w/o, oss: {key: k}}]}\n"), shipped, nil,
			"output artifact o: no artifact repository to upload it to"},
		{"no image", writeFile(t, "noimg.yaml", "name: x\ncontainer: {command: [sh]}\n"), shipped, nil, "container main has no image: set its image in the template"},
		{"no script image", writeFile(t, "noimgs.yaml", "name: x\nscript: {command: [sh], source: echo}\n"), shipped, nil, "container main has no image"},
		{"invalid namespace", filepath.Join(examples, "script-result.yaml"), shipped, []string{"--namespace", "Team_A"}, `--namespace "Team_A": not a namespace name`},
		{"valid namespace", filepath.Join(examples, "script-result.yaml"), shipped, []string{"--namespace", "team-a"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			err := Run(context.Background(), append([]string{"render", "--template", tc.template, "--configmap", tc.configmap}, tc.extra...), IO{Out: &out, Err: &stderr})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("render: %v", err)
				}
				return
			}
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cannot run") {
				t.Fatalf("error = %v (exit %d), want a usage error saying %q", err, ExitCode(err), tc.want)
			}
			if out.Len() > 0 {
				t.Errorf("printed a pod despite the error")
			}
		})
	}
}

// argoWorkflow is Argo's own hello-world example with a label that picks
// the kubelet backend.
const argoWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: hello-world-
  labels:
    workflows.argoproj.io/container-runtime-executor: kubelet
spec:
  entrypoint: whalesay
  templates:
  - name: other
    container: {image: busybox}
  - name: whalesay
    container:
      image: docker/whalesay:latest
      command: [cowsay]
      args: ["hello world"]
`

// TestRenderWorkflow: an Argo Workflow renders its entrypoint template,
// under the Workflow's labels; one whose entrypoint is not one step, or is
// missing, is an error saying what render takes.
func TestRenderWorkflow(t *testing.T) {
	cm := writeFile(t, "cm.yaml", "containerRuntimeExecutor: k8sapi\n")
	var out, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"render", "--template", writeFile(t, "wf.yaml", argoWorkflow), "--configmap", cm}, IO{Out: &out, Err: &stderr}); err != nil {
		t.Fatalf("render a Workflow: %v\n%s", err, stderr.String())
	}
	var pod corev1.Pod
	if err := workflow.DecodeStrict(out.Bytes(), &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Name != "whalesay" || executorOf(&pod) != workflow.ExecutorKubelet {
		t.Errorf("pod %s with executor %s, want whalesay (the entrypoint) with kubelet (the Workflow's label)", pod.Name, executorOf(&pod))
	}
	for _, tc := range []struct{ name, wf, want string }{
		{"steps entrypoint", strings.Replace(argoWorkflow, "entrypoint: whalesay", "entrypoint: main", 1) + "  - name: main\n    steps: [[{name: a, template: whalesay}]]\n",
			"entrypoint main is a steps template; render and run build the pod of one step: pass one of its container or script templates alone (spec.templates[i])"},
		{"missing entrypoint", strings.Replace(argoWorkflow, "entrypoint: whalesay", "entrypoint: nope", 1), `no template named "nope" (spec.entrypoint) among other, whalesay`},
		{"no entrypoint", strings.Replace(argoWorkflow, "entrypoint: whalesay", "", 1), "has no spec.entrypoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(context.Background(), []string{"render", "--template", writeFile(t, "wf.yaml", tc.wf), "--configmap", cm}, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}
