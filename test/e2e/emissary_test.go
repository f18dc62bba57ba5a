//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/emissary"
	"github.com/argoexec/argoexec/executor/executortest"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// TestEmissaryKillConformance runs the conformance suite's Kill cases on the emissary backend
// against a real pod: each container runs under the real wrapper (`argoexec emissary --`,
// this tree's static build, staged into the pod's var-run-argo emptyDir by a busybox init
// container, as `argoexec init` does), and the backend works from the node over that
// emptyDir's directory, as wait does from inside the pod. SIGKILL reaches a command that
// ignores SIGTERM, which no exec-based backend can do for a PID 1.
func TestEmissaryKillConformance(t *testing.T) {
	executortest.RunKillConformance(t, executortest.Env{
		Backend:            emissary.ExecutorEmissary,
		SignalsFromOutside: true,
		Start: func(t *testing.T, cs []executortest.Container) executor.ContainerRuntimeExecutor {
			f := framework.New(t)
			ctx := f.Context()
			pod := f.CreatePod(ctx, emissaryPod(t, f, "emissary-kill", cs))
			if _, err := f.WaitForPod(ctx, pod.Name, startedAll); err != nil {
				t.Fatalf("pod %s: %v", pod.Name, err)
			}
			vols := filepath.Join("/var/lib/kubelet/pods", string(pod.UID), "volumes/kubernetes.io~empty-dir")
			x, err := emissary.New(emissary.Config{Root: filepath.Join(vols, wf.VarRunArgoVolume)}, testLog(t, nil))
			if err != nil {
				t.Fatalf("emissary.New over the pod's %s emptyDir: %v", wf.VarRunArgoVolume, err)
			}
			return readyFiles{Executor: x, vols: vols}
		},
	})
}

// readyFiles is the emissary backend with GetFileContents of a container's /tmp, which each
// container of emissaryPod has on an emptyDir of its own: the suite polls its ready file there.
// (emissary itself reads only the outputs the wrapper copies once main exits.)
type readyFiles struct {
	*emissary.Executor
	vols string
}

func (r readyFiles) GetFileContents(_ context.Context, container, path string) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.vols, "tmp-"+container, filepath.Base(path)))
	return string(b), err
}

// emissaryPod runs each container's script under the wrapper staged in /var/run/argo, with
// /tmp on an emptyDir of its own.
func emissaryPod(t *testing.T, f *framework.Framework, name string, cs []executortest.Container) *corev1.Pod {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "argoexec"), "./cmd/argoexec")
	build.Dir = repoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/argoexec: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "template"), []byte(`{"name":"conformance","container":{"image":"busybox"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	hostDir := corev1.HostPathDirectory
	pod := f.SimplePod(name, "true")
	pod.Spec.Volumes = []corev1.Volume{
		{Name: wf.VarRunArgoVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "stage", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostDir}}},
	}
	runArgo := corev1.VolumeMount{Name: wf.VarRunArgoVolume, MountPath: wf.VarRunArgoPath}
	pod.Spec.InitContainers = []corev1.Container{{
		Name: "init", Image: f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever,
		Command: []string{"sh", "-c", "cp /stage/argoexec /var/run/argo/argoexec && chmod 0555 /var/run/argo/argoexec && " +
			"cp /stage/template /var/run/argo/template && mkdir -m 0777 /var/run/argo/ctr"},
		VolumeMounts: []corev1.VolumeMount{runArgo, {Name: "stage", MountPath: "/stage", ReadOnly: true}},
	}}
	pod.Spec.Containers = nil
	for _, c := range cs {
		tmp := "tmp-" + c.Name
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: tmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: c.Name, Image: f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever,
			Command:      []string{emissary.WrapperPath, "emissary", "--", "/bin/sh", "-c", c.Script},
			Env:          []corev1.EnvVar{{Name: wf.EnvArgoContainerName, Value: c.Name}},
			VolumeMounts: []corev1.VolumeMount{runArgo, {Name: tmp, MountPath: "/tmp"}},
		})
	}
	return pod
}
