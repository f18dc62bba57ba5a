package emissary

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

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

// NeedsInit implements podspec.Backend: init's Stage copies the wrapper to
// WrapperPath before any wrapped container starts, in every pod.
func (podShape) NeedsInit() bool { return true }

// Shape implements podspec.Backend: this pod builder refuses emissary for
// now, saying which controller builds such pods.
func (podShape) Shape(*config.Config, *corev1.Pod) error {
	// Every wrapped container ([/var/run/argo/argoexec emissary -- CMD],
	// ARGO_CONTAINER_NAME, the var-run-argo mount) needs init to have staged
	// the wrapper first; Build adds init only for input artifacts, and no
	// emissary pod of this builder has run on a cluster yet.
	return fmt.Errorf("the emissary executor is for pods built by Argo Workflows' controller (its default): this pod builder cannot build emissary pods yet (every pod would need an init container to stage %s); pick docker, k8sapi or kubelet", WrapperPath)
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
