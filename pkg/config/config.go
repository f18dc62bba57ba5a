// Package config holds the controller's ConfigMap (workflow-controller-configmap,
// in Argo's per-key layout or the legacy single key `config`): its types,
// defaults, validation, loading, and the choice of container runtime
// executor for a workflow.
package config

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Where the configuration lives and its defaults.
const (
	// ConfigMapName is the ConfigMap the controller reads.
	ConfigMapName = "workflow-controller-configmap"
	// ConfigKey is the ConfigMap data key that holds the whole configuration
	// as one YAML document (the legacy layout). Without it, each data key is
	// one top-level key whose value is YAML (Argo's per-key layout).
	ConfigKey = "config"
	// DefaultExecutorImage is the argoexec image used when executor.image is unset.
	DefaultExecutorImage = "argoexec:dev"
)

// Config is the controller's configuration: which container runtime
// executor each workflow pod uses and how the pod builder shapes the pod
// for it. Zero fields are filled by SetDefaults.
type Config struct {
	// ContainerRuntimeExecutor is the backend used when no label or selector picks one.
	ContainerRuntimeExecutor string `json:"containerRuntimeExecutor,omitempty"`
	// ContainerRuntimeExecutors are tried in order; the first whose selector
	// matches the workflow's labels picks the backend.
	ContainerRuntimeExecutors []ExecutorSelector `json:"containerRuntimeExecutors,omitempty"`
	// KubeletPort is the kubelet's HTTPS port (kubelet backend).
	KubeletPort int `json:"kubeletPort,omitempty"`
	// KubeletInsecure skips verification of the kubelet's serving certificate.
	KubeletInsecure bool `json:"kubeletInsecure,omitempty"`
	// KubeletCAFile is a CA bundle on the node that signs the kubelet's
	// serving certificate; the pod builder mounts it read-only into wait
	// (hostPath, type File) at the same path. Empty means the in-cluster
	// service-account CA.
	KubeletCAFile string `json:"kubeletCAFile,omitempty"`
	// SidecarMode is native (sidecars as restartable init containers,
	// stopped by the kubelet) or legacy (plain containers that wait kills).
	SidecarMode string `json:"sidecarMode,omitempty"`
	// DockerSockPath is the Docker Engine socket on the node (docker backend).
	DockerSockPath string `json:"dockerSockPath,omitempty"`
	// EmissaryImageVolume says how emissary pods get the wrapper binary:
	// ImageVolumeAlways mounts the executor image into the wrapped
	// containers (an image volume, KEP-4639) and builds no init container
	// for it; ImageVolumeNever copies it from init, as Argo's controller
	// does; ImageVolumeAuto is always where every node can mount image
	// volumes, as the caller finds out (see podspec.ImageVolumeSupport).
	EmissaryImageVolume string `json:"emissaryImageVolume,omitempty"`
	// Executor is the container spec of init and wait: image, pull policy,
	// resources, env, args (appended to `argoexec init|wait`), securityContext.
	Executor corev1.Container `json:"executor,omitempty"`
	// ArtifactRepository is where output artifacts are uploaded.
	ArtifactRepository workflow.ArtifactRepository `json:"artifactRepository,omitempty"`

	// Ignored lists the keys of Argo's controller configuration that were
	// set and that this controller does not use (see ArgoIgnoredKeys), for
	// the controller to log; it is not itself a key.
	Ignored []string `json:"-"`
}

// The values of EmissaryImageVolume.
const (
	// ImageVolumeAuto mounts the executor image where the cluster can.
	ImageVolumeAuto = "auto"
	// ImageVolumeAlways mounts the executor image into the wrapped containers.
	ImageVolumeAlways = "always"
	// ImageVolumeNever copies the wrapper from init.
	ImageVolumeNever = "never"
)

// ExecutorSelector picks backend Name for workflows whose labels match Selector.
type ExecutorSelector struct {
	// Name is the backend: docker, k8sapi or kubelet.
	Name string `json:"name"`
	// Selector is matched against the workflow's labels.
	Selector metav1.LabelSelector `json:"selector"`
}

// Default returns the configuration of an empty ConfigMap.
func Default() *Config {
	c := &Config{}
	c.SetDefaults()
	return c
}

// SetDefaults fills every unset field with its default.
func (c *Config) SetDefaults() {
	if c.ContainerRuntimeExecutor == "" {
		c.ContainerRuntimeExecutor = workflow.ExecutorK8sAPI
	}
	if c.KubeletPort == 0 {
		c.KubeletPort = workflow.DefaultKubeletPort
	}
	if c.SidecarMode == "" {
		c.SidecarMode = workflow.SidecarModeNative
	}
	if c.DockerSockPath == "" {
		c.DockerSockPath = workflow.DefaultDockerSockPath
	}
	if c.EmissaryImageVolume == "" {
		c.EmissaryImageVolume = ImageVolumeAuto
	}
	if c.Executor.Image == "" {
		c.Executor.Image = DefaultExecutorImage
	}
	if s3 := c.ArtifactRepository.S3; s3 != nil && s3.KeyFormat == "" {
		s3.KeyFormat = workflow.DefaultKeyFormat
	}
	if gcs := c.ArtifactRepository.GCS; gcs != nil && gcs.KeyFormat == "" {
		gcs.KeyFormat = workflow.DefaultKeyFormat
	}
	if oss := c.ArtifactRepository.OSS; oss != nil && oss.KeyFormat == "" {
		oss.KeyFormat = workflow.DefaultKeyFormat
	}
}
