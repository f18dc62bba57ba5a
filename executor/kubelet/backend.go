package kubelet

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/backend"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// caVolume is the hostPath volume of the kubelet CA (ConfigMap kubeletCAFile).
const caVolume = "kubelet-ca"

// Backend is the kubelet backend's registration: the ConfigMap keys
// kubeletPort, kubeletInsecure and kubeletCAFile, wait's ARGO_KUBELET_*
// env (the host from status.hostIP) and the CA's hostPath mount, the RBAC
// of manifests/overlays/kubelet (nodes/proxy, nodes/pods).
func Backend() backend.Registration {
	return backend.Registration{Pod: podShape{}, Overlay: workflow.ExecutorKubelet, FromEnv: fromEnv}
}

// podShape is the kubelet backend as the configuration and the pod builder see it.
type podShape struct{}

// Name implements config.Backend.
func (podShape) Name() string { return workflow.ExecutorKubelet }

// CheckConfig implements config.Backend: kubeletPort is a port, and
// kubeletCAFile is an absolute path that kubeletInsecure does not contradict.
func (podShape) CheckConfig(c *config.Config) []error {
	var errs []error
	if c.KubeletPort < 1 || c.KubeletPort > 65535 {
		errs = append(errs, fmt.Errorf("kubeletPort: %d is not a port", c.KubeletPort))
	}
	switch {
	case c.KubeletCAFile == "":
	case c.KubeletInsecure:
		errs = append(errs, fmt.Errorf("kubeletInsecure: true contradicts kubeletCAFile %q: set one or the other", c.KubeletCAFile))
	default:
		if err := config.CheckAbsPath("kubeletCAFile", c.KubeletCAFile); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ReadsExitedMain implements podspec.Backend: exec needs main running.
func (podShape) ReadsExitedMain() bool { return false }

// NeedsInit implements podspec.Backend: init runs only to load input artifacts.
func (podShape) NeedsInit(*config.Config) bool { return false }

// Shape implements podspec.Backend: wait gets the kubelet's address (the
// node's IP from the downward API), port, TLS settings, and the CA file
// mounted from the node at the same path unless it is inside the
// service-account mount every container has.
func (podShape) Shape(cfg *config.Config, p *corev1.Pod) error {
	c := podspec.WaitContainer(p)
	c.Env = append(c.Env,
		podspec.FieldEnv(workflow.EnvKubeletHost, "status.hostIP"),
		corev1.EnvVar{Name: workflow.EnvKubeletPort, Value: strconv.Itoa(cfg.KubeletPort)},
		corev1.EnvVar{Name: workflow.EnvKubeletInsecure, Value: strconv.FormatBool(cfg.KubeletInsecure)},
	)
	ca := cfg.KubeletCAFile
	if ca == "" {
		return nil
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: workflow.EnvKubeletCAFile, Value: ca})
	if strings.HasPrefix(ca, path.Dir(workflow.ServiceAccountCAPath)+"/") {
		return nil
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: caVolume, MountPath: ca, ReadOnly: true})
	p.Spec.Volumes = append(p.Spec.Volumes, podspec.HostPathVolume(caVolume, ca, corev1.HostPathFile))
	return nil
}

// fromEnv reads the Config that the pod builder's env (or Argo's
// controller's) gives wait. Argo's controller passes ARGO_KUBELET_PORT=0
// when its ConfigMap sets no kubeletPort: that is the default port.
func fromEnv(env backend.Env) (backend.Constructor, error) {
	cfg, err := ConfigFromEnv(env.Getenv)
	if err != nil {
		return nil, err
	}
	cfg.Namespace, cfg.PodName = env.Namespace, env.PodName
	return func(_ *rest.Config, log *logrus.Entry) (executor.ContainerRuntimeExecutor, error) {
		return New(cfg, log)
	}, nil
}

// ConfigFromEnv reads the kubelet's address and TLS settings from the
// ARGO_KUBELET_* variables, with the defaults filled in, and checks them:
// each error names the variable and what sets it.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{Host: getenv(workflow.EnvKubeletHost), CAFile: getenv(workflow.EnvKubeletCAFile)}
	if v := getenv(workflow.EnvKubeletPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			return Config{}, fmt.Errorf("%s=%q is not a port number", workflow.EnvKubeletPort, v)
		}
		cfg.Port = p // 0, from Argo's controller, is the default
	}
	if v := getenv(workflow.EnvKubeletInsecure); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("%s=%q is not a boolean (want true or false)", workflow.EnvKubeletInsecure, v)
		}
		cfg.Insecure = b
	}
	if cfg.Port == 0 {
		cfg.Port = workflow.DefaultKubeletPort
	}
	if cfg.Host == "" {
		return Config{}, fmt.Errorf("the kubelet executor needs %s (the pod builder sets it from status.hostIP)", workflow.EnvKubeletHost)
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return Config{}, fmt.Errorf("%s=%d is not a port (1-65535)", workflow.EnvKubeletPort, cfg.Port)
	}
	return cfg, nil
}
