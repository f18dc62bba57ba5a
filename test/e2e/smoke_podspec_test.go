//go:build e2e

package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/backends"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// A pod built by pkg/podspec is accepted by the real API server, scheduled, and runs on the
// real kubelet with the wait container (argoexec:dev) started next to main. Whether wait then
// reports outputs is TestWorkflow's business (it needs the backend's RBAC); this only proves
// the pod shape and the executor image work on the testbed.
func TestSmokePodspecPodRunsWait(t *testing.T) {
	f := framework.New(t)
	ctx := f.Context()
	cfg := config.Default()
	cfg.Executor.Image = f.Env.ExecutorImage
	cfg.Executor.ImagePullPolicy = corev1.PullNever
	tmpl := &wf.Template{Name: "smoke", Container: &corev1.Container{
		Image: f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever,
		Command: []string{"sh", "-c", "echo main ran"},
	}}
	pod, err := podspec.Build(cfg, backends.All().Pods(), tmpl, podspec.Meta{PodName: "podspec-smoke", Namespace: f.Namespace})
	if err != nil {
		t.Fatalf("podspec.Build: %v", err)
	}
	var spec *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == wf.WaitContainerName {
			spec = &pod.Spec.Containers[i]
		}
	}
	if spec == nil {
		t.Fatalf("pod built by podspec has no %q container: %+v", wf.WaitContainerName, pod.Spec.Containers)
	}
	if spec.Image != f.Env.ExecutorImage {
		t.Errorf("wait image %q, want %q", spec.Image, f.Env.ExecutorImage)
	}
	f.CreatePod(ctx, pod)
	// Done when main has terminated and wait has at least started; a container that cannot be
	// created (image not imported, bad spec) fails at once.
	got, err := f.WaitForPod(ctx, pod.Name, func(p *corev1.Pod) (bool, error) {
		var mainDone, waitStarted bool
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
					return false, &podError{cs.Name + ": " + w.Reason + ": " + w.Message}
				}
			}
			switch cs.Name {
			case "main":
				mainDone = cs.State.Terminated != nil
			case wf.WaitContainerName:
				waitStarted = cs.State.Running != nil || cs.State.Terminated != nil
			}
		}
		if p.Status.Phase == corev1.PodFailed && !waitStarted {
			return false, &podError{"pod failed before wait started: " + framework.DescribeStatuses(p)}
		}
		return mainDone && waitStarted, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("phase %s: %s", got.Status.Phase, framework.DescribeStatuses(got))
	logs, err := f.PodLogs(ctx, pod.Name, "main")
	if err != nil {
		t.Fatalf("main logs: %v", err)
	}
	if logs != "main ran\n" {
		t.Errorf("main log %q", logs)
	}
}

type podError struct{ msg string }

func (e *podError) Error() string { return e.msg }
