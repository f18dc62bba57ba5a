package emissary

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
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
// WrapperPath before any wrapped container starts, in every pod, unless cfg
// mounts the executor image into the wrapped containers instead
// (emissaryImageVolume: always).
func (podShape) NeedsInit(cfg *config.Config) bool {
	return cfg == nil || cfg.EmissaryImageVolume != config.ImageVolumeAlways
}

// Shape implements podspec.Backend, as Argo v3.3.8's controller shapes an
// emissary pod (argo-v3.3-protocol.md §1.4, §7.2): main and every sidecar
// run [WrapperPath emissary -- COMMAND...] with their args unchanged, have
// ARGO_CONTAINER_NAME (the wrapper's ctr/NAME directory) and mount the
// var-run-argo volume (Build mounts it in init, wait and main; the
// sidecars get it here). A container without
// a command is refused: Argo's controller would look its image up in its
// ConfigMap's images key, and this pod builder reads no image's
// ENTRYPOINT.
//
// With emissaryImageVolume: always the wrapper is not copied by init: the
// executor image is an image volume (KEP-4639) mounted read-only at
// ImageMountPath in each wrapped container, which runs the binary from it
// (ImageBinary), and reads the template from the projected pod annotation
// (ARGO_TEMPLATE_PATH, the podmetadata volume) that init would have
// copied.
func (podShape) Shape(cfg *config.Config, p *corev1.Pod) error {
	var errs []error
	fromImage := cfg != nil && cfg.EmissaryImageVolume == config.ImageVolumeAlways
	wrapperPath := WrapperPath
	if fromImage {
		wrapperPath = ImageBinary(cfg)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: ImageVolume, VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: cfg.Executor.Image, PullPolicy: cfg.Executor.ImagePullPolicy}}})
	}
	for _, c := range podspec.UserContainers(p) {
		if len(c.Command) == 0 {
			errs = append(errs, noCommand(c.Name))
			continue
		}
		c.Command = append([]string{wrapperPath, "emissary", "--"}, c.Command...)
		c.Env = append(c.Env, corev1.EnvVar{Name: workflow.EnvArgoContainerName, Value: c.Name})
		mount(c, workflow.VarRunArgoVolume, workflow.VarRunArgoPath)
		if fromImage {
			c.Env = append(c.Env, corev1.EnvVar{Name: workflow.EnvTemplatePath, Value: workflow.TemplateFile})
			mount(c, ImageVolume, ImageMountPath)
			mount(c, workflow.PodMetadataVolume, workflow.PodMetadataPath)
		}
	}
	return errors.Join(errs...)
}

// The executor image as a volume (emissaryImageVolume: always).
const (
	// ImageVolume is the pod volume of the executor image.
	ImageVolume = "argoexec-image"
	// ImageMountPath is where the wrapped containers mount it, read-only.
	ImageMountPath = "/var/run/argoexec-image"
	// imageBinary is argoexec's path in the image when executor.command
	// names no absolute path: the Dockerfile's /bin/argoexec.
	imageBinary = "/bin/argoexec"
)

// ImageBinary is the wrapper's path in the wrapped containers when the
// executor image is mounted at ImageMountPath: executor.command's first
// element when it is an absolute path in the image, else /bin/argoexec.
func ImageBinary(cfg *config.Config) string {
	bin := imageBinary
	if len(cfg.Executor.Command) > 0 && path.IsAbs(cfg.Executor.Command[0]) {
		bin = cfg.Executor.Command[0]
	}
	return ImageMountPath + bin
}

// mount mounts volume at dir in c, unless c mounts it already; the
// executor's own volumes are read-only there but var-run-argo, where the
// wrapper writes.
func mount(c *corev1.Container, volume, dir string) {
	if slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume }) {
		return
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: volume != workflow.VarRunArgoVolume})
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
