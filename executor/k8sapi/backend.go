package k8sapi

import (
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// Backend is the k8sapi backend's registration: no ConfigMap keys, nothing
// added to the pod (wait reaches the API server with the pod's service
// account), the RBAC of manifests/overlays/k8sapi.
func Backend() backend.Registration {
	return backend.Registration{Pod: podShape{}, Overlay: workflow.ExecutorK8sAPI, FromEnv: fromEnv}
}

// podShape is the k8sapi backend as the pod builder sees it.
type podShape struct{}

// Name implements config.Backend.
func (podShape) Name() string { return workflow.ExecutorK8sAPI }

// CheckConfig implements config.Backend: k8sapi reads no key.
func (podShape) CheckConfig(*config.Config) []error { return nil }

// ReadsExitedMain implements podspec.Backend: exec needs main running.
func (podShape) ReadsExitedMain() bool { return false }

// NeedsInit implements podspec.Backend: init runs only to load input artifacts.
func (podShape) NeedsInit(*config.Config) bool { return false }

// Shape implements podspec.Backend: k8sapi needs nothing in the pod.
func (podShape) Shape(*config.Config, *corev1.Pod) error { return nil }

func fromEnv(env backend.Env) (backend.Constructor, error) {
	cfg := Config{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace, PodName: env.PodName}
	return func(_ *rest.Config, log *logrus.Entry) (executor.ContainerRuntimeExecutor, error) {
		return New(cfg, log)
	}, nil
}
