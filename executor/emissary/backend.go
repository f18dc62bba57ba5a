package emissary

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/executor/emissary/wrapper"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// ExecutorEmissary is the backend's name as containerRuntimeExecutor
// spells it: Argo v3.3's default when its ConfigMap names none.
const ExecutorEmissary = "emissary"

// WrapperPath is where argoexec init stages the binary, the path every
// wrapped container's command starts with (Argo's, EME:54-71).
const WrapperPath = workflow.VarRunArgoPath + "/argoexec"

// Backend is the emissary backend's registration: no ConfigMap keys; main
// and the sidecars are wrapped by `argoexec emissary --`; every pod gets
// init, which stages the binary and the template; wait needs no API access
// beyond the report (manifests/overlays/emissary: the report's RBAC only).
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

// ReadsExitedMain implements podspec.Backend: the wrapper copies main's
// declared output parameters and archives its output artifacts that are
// not on a volume to the shared volume when main exits, before it writes
// main's exit code (wrapper.ParameterPath, wrapper.ArtifactPath).
func (podShape) ReadsExitedMain() bool { return true }

// NeedsInit implements podspec.Backend: init's Stage copies the wrapper to
// WrapperPath before any wrapped container starts, in every pod.
func (podShape) NeedsInit() bool { return true }

// Shape implements podspec.Backend, as Argo v3.3.8's controller shapes an
// emissary pod (argo-v3.3-protocol.md §1.4, §7.2): main and every sidecar
// run [WrapperPath emissary -- COMMAND...] with their args unchanged, have
// ARGO_CONTAINER_NAME (the wrapper's ctr/NAME directory) and mount the
// var-run-argo volume (Build mounts it in init, wait and main; the
// sidecars get it here). A container without
// a command is refused: Argo's controller would look its image up in its
// ConfigMap's images key, and this pod builder reads no image's
// ENTRYPOINT.
func (podShape) Shape(_ *config.Config, p *corev1.Pod) error {
	var errs []error
	for _, c := range podspec.UserContainers(p) {
		if len(c.Command) == 0 {
			errs = append(errs, noCommand(c.Name))
			continue
		}
		c.Command = append([]string{WrapperPath, "emissary", "--"}, c.Command...)
		c.Env = append(c.Env, corev1.EnvVar{Name: workflow.EnvArgoContainerName, Value: c.Name})
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == workflow.VarRunArgoVolume }) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: workflow.VarRunArgoVolume, MountPath: workflow.VarRunArgoPath})
		}
	}
	return errors.Join(errs...)
}

// noCommand is the refusal of the container named name, which has no
// command to wrap.
func noCommand(name string) error {
	who := fmt.Sprintf("sidecar %q", name)
	if name == workflow.MainContainerName {
		who = fmt.Sprintf("container %q", name)
	}
	return fmt.Errorf("%s: command is empty: the emissary executor runs every container's command under its wrapper (%s emissary -- COMMAND...), "+
		"and this pod builder cannot read the image's ENTRYPOINT (it reaches no registry): set command to what the image runs (its ENTRYPOINT and CMD), "+
		"or pick another executor (containerRuntimeExecutor, or the workflow label %s)", who, WrapperPath, workflow.LabelContainerRuntimeExecutor)
}

// fromEnv builds the backend over /var/run/argo. ListContainerNames lists
// the containers that started under the wrapper (Argo's behaviour): a
// container that is not wrapped cannot be signalled by this backend anyway.
func fromEnv(env backend.Env) (backend.Constructor, error) {
	cfg := Config{Root: workflow.VarRunArgoPath}
	return func(_ *rest.Config, log *logrus.Entry) (executor.ContainerRuntimeExecutor, error) {
		return New(cfg, log)
	}, nil
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
