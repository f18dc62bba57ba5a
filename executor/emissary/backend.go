package emissary

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/executor/emissary/wrapper"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// ExecutorEmissary is the backend's name as containerRuntimeExecutor
// spells it: Argo v3.3's default when its ConfigMap names none.
const ExecutorEmissary = "emissary"

// WrapperPath is where argoexec init stages the binary, the path every
// wrapped container's command starts with (Argo's, EME:54-71).
const WrapperPath = workflow.VarRunArgoPath + "/argoexec"

// Backend is the emissary backend's registration: no ConfigMap keys; main,
// the sidecars and the user's init containers after init are wrapped by
// `argoexec emissary --`; init stages the binary and the template; wait
// needs no API access beyond the report (manifests/overlays/emissary: the
// report's RBAC only).
func Backend() backend.Registration {
	return backend.Registration{Pod: podShape{}, Overlay: ExecutorEmissary, FromEnv: fromEnv, Stage: stage}
}

// podShape is the emissary backend as the configuration and the pod
// builder see it.
type podShape struct{}

// Name implements config.Backend.
func (podShape) Name() string { return ExecutorEmissary }

// CheckConfig implements config.Backend: emissary reads no key.
func (podShape) CheckConfig(*config.Config) []error { return nil }

// ReadsExitedMain implements podspec.Backend. The wrapper copies main's
// declared outputs from main's own filesystem when main exits, but this pod
// builder cannot build emissary pods yet (Shape refuses them), so it must
// not offer emissary as the fix for outputs outside a volume.
func (podShape) ReadsExitedMain() bool { return false }

// Shape implements podspec.Backend. Every container but wait and init (main,
// sidecars, native sidecars, user init containers) gets command
// [/var/run/argo/argoexec emissary -- COMMAND...] with its args unchanged,
// ARGO_CONTAINER_NAME and the var-run-argo mount; the pod gets the init
// container if Build did not add one (it must run first: it stages the
// binary). A container with no command is refused: the wrapper needs it,
// and this controller does not read the image's entrypoint (Argo's takes it
// from the `images` ConfigMap key).
func (podShape) Shape(cfg *config.Config, pod *corev1.Pod) error {
	wrap := func(c *corev1.Container) error {
		if c.Name == workflow.WaitContainerName || c.Name == workflow.InitContainerName {
			return nil
		}
		if len(c.Command) == 0 {
			return fmt.Errorf("container %q has no command: the emissary executor wraps the command and cannot read the image's entrypoint; set command (Argo's controller takes it from the images key of its ConfigMap)", c.Name)
		}
		c.Command = append([]string{WrapperPath, "emissary", "--"}, c.Command...)
		c.Env = append(c.Env, corev1.EnvVar{Name: workflow.EnvArgoContainerName, Value: c.Name})
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == workflow.VarRunArgoPath }) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: workflow.VarRunArgoVolume, MountPath: workflow.VarRunArgoPath})
		}
		return nil
	}
	for i := range pod.Spec.Containers {
		if err := wrap(&pod.Spec.Containers[i]); err != nil {
			return err
		}
	}
	for i := range pod.Spec.InitContainers {
		if err := wrap(&pod.Spec.InitContainers[i]); err != nil {
			return err
		}
	}
	if !slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == workflow.InitContainerName }) {
		// TODO(lead): build it as Build builds init (podspec's exec
		// container helper: image, pull policy, resources, security
		// context, the template mount) and prepend it.
		return fmt.Errorf("emissary: the pod has no %q init container to stage %s; podspec.Build must add one for this backend", workflow.InitContainerName, WrapperPath)
	}
	return nil
}

// fromEnv builds the backend over /var/run/argo. ListContainerNames lists
// the containers that started under the wrapper (Argo's behaviour): a
// container that is not wrapped cannot be signalled by this backend anyway.
func fromEnv(env backend.Env) (backend.Constructor, error) {
	cfg := Config{Root: workflow.VarRunArgoPath}
	return func(log *logrus.Entry) (executor.ContainerRuntimeExecutor, error) { return New(cfg, log) }, nil
}

// stage is what init does for emissary pods before its flow: the binary
// (argoexec itself, a static build) to WrapperPath, and the template beside
// it, for the wrapped containers.
func stage(tmpl *workflow.Template) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("emissary: find argoexec's own binary to stage at %s: %w", WrapperPath, err)
	}
	b, err := json.Marshal(tmpl)
	if err != nil {
		return fmt.Errorf("emissary: encode the template for %s/template: %w", workflow.VarRunArgoPath, err)
	}
	return wrapper.Stage(workflow.VarRunArgoPath, self, string(b))
}
