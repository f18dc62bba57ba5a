package podspec_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// wrapper is a made-up backend registered only here: shaped like Argo's
// emissary, it wraps main's command, adds an init container that copies
// its binary and a volume for it, and reads main's files itself. It proves
// that the pod builder shapes a pod for a backend it has never heard of.
type wrapper struct {
	name      string
	shapeErr  error
	needsInit bool
}

func (w wrapper) Name() string                       { return w.name }
func (w wrapper) CheckConfig(*config.Config) []error { return nil }
func (w wrapper) ReadsExitedMain() bool              { return true }
func (w wrapper) NeedsInit(*config.Config) bool      { return w.needsInit }

func (w wrapper) Shape(_ *config.Config, pod *corev1.Pod) error {
	if w.shapeErr != nil {
		return w.shapeErr
	}
	main := &pod.Spec.Containers[0]
	main.Command = append([]string{"/wrapper/bin", "emissary", "--"}, main.Command...)
	main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: "wrapper-bin", MountPath: "/wrapper"})
	pod.Spec.InitContainers = append([]corev1.Container{{Name: "copy-wrapper", Image: "wrapper:1", Command: []string{"cp", "/bin/wrapper", "/wrapper/bin"},
		VolumeMounts: []corev1.VolumeMount{{Name: "wrapper-bin", MountPath: "/wrapper"}}}}, pod.Spec.InitContainers...)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "wrapper-bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	w8 := podspec.WaitContainer(pod)
	w8.Env = append(w8.Env, corev1.EnvVar{Name: "WRAPPER", Value: "1"})
	return nil
}

// TestUnknownBackendShapesPod builds pods with a backend that only this
// test registers: Build has no case for it, yet the pod carries its shape,
// its name reaches wait, and its refusals and abilities count.
func TestUnknownBackendShapesPod(t *testing.T) {
	only := []podspec.Backend{wrapper{name: "wrapper"}}
	cfg := config.Default()
	cfg.ContainerRuntimeExecutor = "wrapper"
	if err := cfg.Validate([]config.Backend{only[0]}); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// base-layer's outputs are on main's own filesystem: allowed, since
	// the backend reads an exited main.
	pod, err := podspec.Build(cfg, only, mustTemplate(t, "base-layer.yaml"), meta())
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	main := container(pod, workflow.MainContainerName)
	if main.Command[0] != "/wrapper/bin" || !slices.Contains(main.Command, "echo 42 > /tmp/out") {
		t.Errorf("main's command = %q, want it wrapped", main.Command)
	}
	if names(pod.Spec.InitContainers)[0] != "copy-wrapper" {
		t.Errorf("init containers = %v, want the wrapper's copy first", names(pod.Spec.InitContainers))
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "wrapper-bin" }) {
		t.Errorf("volumes %+v lack the wrapper's", pod.Spec.Volumes)
	}
	wait := container(pod, workflow.WaitContainerName)
	if v, ok := envValue(wait, "WRAPPER"); !ok || v.Value != "1" {
		t.Errorf("wait's env lacks the backend's WRAPPER=1")
	}
	if v, ok := envValue(wait, workflow.EnvContainerRuntimeExecutor); !ok || v.Value != "wrapper" {
		t.Errorf("wait's %s = %+v, want wrapper", workflow.EnvContainerRuntimeExecutor, v)
	}

	t.Run("Shape's refusal is Build's", func(t *testing.T) {
		_, err := podspec.Build(cfg, []podspec.Backend{wrapper{name: "wrapper", shapeErr: errors.New("wrapperKey: no")}}, mustTemplate(t, "container.yaml"), meta())
		if err == nil || !strings.Contains(err.Error(), "wrapperKey: no") {
			t.Errorf("err = %v, want the backend's", err)
		}
	})
	t.Run("a backend that needs init gets it without input artifacts", func(t *testing.T) {
		for _, needs := range []bool{false, true} {
			pod, err := podspec.Build(cfg, []podspec.Backend{wrapper{name: "wrapper", needsInit: needs}}, mustTemplate(t, "sidecar-ignores-term.yaml"), meta())
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"copy-wrapper", "stubborn"}
			if needs {
				want = []string{"copy-wrapper", workflow.InitContainerName, "stubborn"}
			}
			if got := names(pod.Spec.InitContainers); !slices.Equal(got, want) {
				t.Errorf("NeedsInit %v: init containers = %v, want %v", needs, got, want)
			}
		}
	})
	t.Run("a backend's volume name is reserved", func(t *testing.T) {
		tmpl := mustTemplate(t, "container.yaml")
		tmpl.Volumes[0].Name = "wrapper-bin"
		tmpl.Container.VolumeMounts[0].Name = "wrapper-bin"
		_, err := podspec.Build(cfg, only, tmpl, meta())
		if err == nil || !strings.Contains(err.Error(), `volumes[0].name: "wrapper-bin" is reserved for the pod builder (a volume it or the wrapper executor adds: rename it)`) {
			t.Errorf("err = %v, want the clash named", err)
		}
	})
	t.Run("an unregistered backend is refused, naming the registered", func(t *testing.T) {
		c := config.Default() // selects k8sapi, which this set lacks
		_, err := podspec.Build(c, only, mustTemplate(t, "container.yaml"), meta())
		if err == nil || !strings.Contains(err.Error(), `executor "k8sapi" is not registered (want wrapper)`) {
			t.Errorf("err = %v, want the missing backend named", err)
		}
	})
	t.Run("the outputs fix names the backends that read an exited main", func(t *testing.T) {
		c := config.Default()
		_, err := podspec.Build(c, append(registered(), wrapper{name: "wrapper"}), mustTemplate(t, "base-layer.yaml"), meta())
		if err == nil || !strings.Contains(err.Error(), "put the path on a volume (emptyDir) or use the docker, emissary or wrapper executor") {
			t.Errorf("err = %v, want docker, emissary and wrapper offered", err)
		}
	})
}
