// Package backend is what one container runtime executor registers, once:
// its name, the check of its ConfigMap keys and the pod shape it needs
// (podspec.Backend), its RBAC overlay, and its constructor from wait's
// environment. Each backend package (executor/k8sapi, executor/kubelet,
// executor/docker) exports a Backend() Registration; executor/backends
// lists them, one line each, for the binaries. Nothing else names a
// backend: the pod builder, the configuration and argoexec's options all
// take the list.
package backend

import (
	"slices"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// Env is what a backend's FromEnv reads: wait's environment and the pod it
// runs in, as argoexec's options found them.
type Env struct {
	// Getenv reads one variable of wait's environment.
	Getenv func(string) string
	// Namespace, PodName and PodUID identify the workflow pod (wait's own).
	Namespace, PodName, PodUID string
	// Kubeconfig is a kubeconfig path for running outside a pod; empty
	// means in-cluster credentials.
	Kubeconfig string
}

// Constructor builds the backend from the settings FromEnv read, logging
// through log.
// restCfg reaches the API server with wait's credentials (nil when it has
// none), for a backend that cross-checks with the pod's status.
type Constructor func(restCfg *rest.Config, log *logrus.Entry) (executor.ContainerRuntimeExecutor, error)

// Registration is everything argoexec and argoexec-step know of one
// backend.
type Registration struct {
	// Pod is the backend's name, the check of the ConfigMap keys it reads,
	// and what it adds to the pod (wait's env, mounts, security context,
	// volumes; for a wrapper, main's command and init work).
	Pod podspec.Backend
	// Overlay is the directory under manifests/overlays that holds the
	// least-privilege RBAC (and a ConfigMap selecting the backend) wait
	// needs with this backend.
	Overlay string
	// FromEnv reads the backend's settings from wait's environment, checks
	// them, and returns the constructor. An error names the variable, the
	// bad value and what sets it; argoexec reports it as a usage error
	// before any work.
	FromEnv func(env Env) (Constructor, error)
	// Stage, when set, is what init does for this backend before its flow
	// (emissary: stage the wrapper binary and the template on the shared
	// volume); an error fails init, so main never starts.
	Stage func(tmpl *wf.Template) error
}

// Name is the backend's name, as containerRuntimeExecutor spells it.
func (r Registration) Name() string { return r.Pod.Name() }

// Set is the backends a binary has.
type Set []Registration

// Names lists the backends' names, sorted.
func (s Set) Names() []string {
	names := make([]string, 0, len(s))
	for _, r := range s {
		names = append(names, r.Name())
	}
	slices.Sort(names)
	return names
}

// Find returns the backend named name.
func (s Set) Find(name string) (Registration, bool) {
	i := slices.IndexFunc(s, func(r Registration) bool { return r.Name() == name })
	if i < 0 {
		return Registration{}, false
	}
	return s[i], true
}

// Pods is the set as the pod builder takes it.
func (s Set) Pods() []podspec.Backend {
	out := make([]podspec.Backend, len(s))
	for i, r := range s {
		out[i] = r.Pod
	}
	return out
}

// Config is the set as the configuration's loaders and Validate take it.
func (s Set) Config() []config.Backend {
	out := make([]config.Backend, len(s))
	for i, r := range s {
		out[i] = r.Pod
	}
	return out
}
