package podspec

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// Backend is what the pod builder needs of one container runtime executor:
// its name and key checks (config.Backend), whether it can read main's own
// filesystem once main has exited, whether its pods need argoexec's init
// container, and what it adds to the pod. Each
// backend package provides one through its registration; Build is given
// the list and never asks for a backend by name.
type Backend interface {
	config.Backend
	// ReadsExitedMain says whether wait can read main's declared outputs
	// anywhere in main's filesystem after main has exited (docker reads
	// the stopped container; emissary's wrapper copies them to the shared
	// volume as main exits; an exec-based backend can reach only main's
	// volumes, which wait mirrors under /mainctrfs). When false, Build
	// refuses outputs that are not on a volume of main.
	ReadsExitedMain() bool
	// NeedsInit says whether every pod this backend shapes under cfg needs
	// argoexec's init container, even when the template has no input
	// artifacts to load: the backend's init hook (backend.Registration.Stage)
	// must run before main, as emissary's stages the wrapper binary unless
	// cfg mounts it from the executor image. Build adds init first among
	// the init containers, before the native sidecars.
	NeedsInit(cfg *config.Config) bool
	// Shape adds to pod, which Build has assembled for cfg, what the
	// backend needs: wait's env, mounts and security context, the pod's
	// volumes; a backend may also rewrite main's and the sidecars' commands
	// (UserContainers; a wrapper such as Argo's emissary) and add init
	// containers. It appends, so that what Build wrote keeps its order. An
	// error refuses cfg for this backend, saying what to change.
	Shape(cfg *config.Config, pod *corev1.Pod) error
}

// configBackends is backends as the configuration sees them.
func configBackends(backends []Backend) []config.Backend {
	out := make([]config.Backend, len(backends))
	for i, b := range backends {
		out[i] = b
	}
	return out
}

// find returns the backend named name.
func find(backends []Backend, name string) (Backend, error) {
	i := slices.IndexFunc(backends, func(b Backend) bool { return b.Name() == name })
	if i < 0 {
		return nil, fmt.Errorf("executor %q is not registered (want %s)", name, config.OneOf(config.BackendNames(configBackends(backends))))
	}
	return backends[i], nil
}

// WaitContainer is pod's wait container, for a Backend's Shape; nil if the
// pod has none.
func WaitContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == workflow.WaitContainerName {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// UserContainers are pod's containers that run the template's commands,
// for a Backend's Shape that wraps them: main, then the sidecars in the
// template's order, wherever Build placed them (legacy sidecars are
// containers, native ones init containers). Neither init nor wait is one,
// nor an init container a backend added.
func UserContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name != workflow.WaitContainerName {
			out = append(out, &pod.Spec.Containers[i])
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

// FieldEnv is the env var name set from the pod's field fieldPath (the
// downward API), e.g. status.hostIP.
func FieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}

// HostPathVolume is the volume name of the node's path p, of type typ.
func HostPathVolume(name, p string, typ corev1.HostPathType) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &typ}}}
}

// IsTrue says whether p is set and true.
func IsTrue(p *bool) bool { return p != nil && *p }
