package docker

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/kubeclient"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// Backend is the docker backend's registration: the ConfigMap key
// dockerSockPath, the node's socket mounted read-only into wait (which runs
// as root unless the ConfigMap says otherwise: the socket is root's), and
// the RBAC of manifests/overlays/docker.
func Backend() backend.Registration {
	return backend.Registration{Pod: podShape{}, Overlay: workflow.ExecutorDocker, FromEnv: fromEnv}
}

// podShape is the docker backend as the configuration and the pod builder see it.
type podShape struct{}

// Name implements config.Backend.
func (podShape) Name() string { return workflow.ExecutorDocker }

// CheckConfig implements config.Backend: dockerSockPath is absolute.
func (podShape) CheckConfig(c *config.Config) []error {
	if err := config.CheckAbsPath(configKey, c.DockerSockPath); err != nil {
		return []error{err}
	}
	return nil
}

// ReadsExitedMain implements podspec.Backend: the archive API reads a
// stopped container's filesystem.
func (podShape) ReadsExitedMain() bool { return true }

// NeedsInit implements podspec.Backend: init runs only to load input artifacts.
func (podShape) NeedsInit(*config.Config) bool { return false }

// Shape implements podspec.Backend: wait gets the socket's path and a
// read-only mount of it from the node, and runs as root (the socket is
// root:docker, 0660) unless executor.securityContext says who it runs as.
// With executor.securityContext runAsNonRoot: true, runAsGroup must name
// the socket's group, or wait could not open it.
func (podShape) Shape(cfg *config.Config, p *corev1.Pod) error {
	if sc := cfg.Executor.SecurityContext; sc != nil && podspec.IsTrue(sc.RunAsNonRoot) && sc.RunAsGroup == nil {
		return fmt.Errorf("executor.securityContext.runAsNonRoot: true does not work with the docker backend: "+
			"wait opens the node's Docker socket %s, which belongs to root (and group docker, mode 0660); "+
			"set executor.securityContext.runAsGroup to the socket's group ID on the nodes, or drop runAsNonRoot to run wait as root. "+
			"A docker-backend pod cannot pass Pod Security restricted or baseline anyway (it mounts the socket from the host): "+
			"use the k8sapi or kubelet backend for that", cfg.DockerSockPath)
	}
	c := podspec.WaitContainer(p)
	c.Env = append(c.Env, corev1.EnvVar{Name: workflow.EnvDockerSockPath, Value: cfg.DockerSockPath})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: workflow.DockerSockVolume, MountPath: cfg.DockerSockPath, ReadOnly: true})
	switch sc := c.SecurityContext; {
	case cfg.Executor.SecurityContext == nil: // the restricted default: root instead of non-root
		sc.RunAsNonRoot = nil
		sc.RunAsUser = new(int64)
	case sc.RunAsUser == nil && !podspec.IsTrue(sc.RunAsNonRoot):
		sc.RunAsUser = new(int64)
	}
	p.Spec.Volumes = append(p.Spec.Volumes, podspec.HostPathVolume(workflow.DockerSockVolume, cfg.DockerSockPath, corev1.HostPathSocket))
	return nil
}

// fromEnv reads the socket's path from ARGO_DOCKER_SOCK_PATH. With API
// credentials, Wait cross-checks the engine with the pod's status.
func fromEnv(env backend.Env) (backend.Constructor, error) {
	cfg := Config{SockPath: env.Getenv(workflow.EnvDockerSockPath), Namespace: env.Namespace, PodName: env.PodName, PodUID: env.PodUID}
	return func(restCfg *rest.Config, log *logrus.Entry) (executor.ContainerRuntimeExecutor, error) {
		if restCfg != nil {
			client, err := kubeclient.New(restCfg)
			if err != nil {
				return nil, fmt.Errorf("docker: create the Kubernetes client that reads the pod's status: %w", err)
			}
			pods, name := client.Pods(cfg.Namespace), cfg.PodName
			cfg.PodStatus = func(ctx context.Context) (*corev1.Pod, error) { return pods.Get(ctx, name, metav1.GetOptions{}) }
		}
		return New(cfg, log)
	}, nil
}
