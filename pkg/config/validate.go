package config

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Backend is what the configuration knows of one container runtime
// executor: its name and the check of the keys it reads. Each backend
// package provides one (through its registration); the binaries pass the
// list to the functions that load and validate a configuration, so this
// package names no backend.
type Backend interface {
	// Name is the backend's name as containerRuntimeExecutor spells it.
	Name() string
	// CheckConfig returns the problems of the keys the backend reads, each
	// naming its key and the bad value (`kubeletPort: 70000 is not a
	// port`); nil when there are none. Every registered backend checks its
	// keys, whichever backend the ConfigMap selects by default: a selector
	// or a workflow label can pick any of them.
	CheckConfig(c *Config) []error
}

// Validate checks every key against the backends this binary has and
// returns all problems joined, each naming the key and the bad value, e.g.
// `kubeletPort: 70000 is not a port`.
func (c *Config) Validate(backends []Backend) error {
	var errs []error
	errs = append(errs, checkExecutorName("containerRuntimeExecutor", c.ContainerRuntimeExecutor, backends))
	for i, s := range c.ContainerRuntimeExecutors {
		errs = append(errs, checkSelector(fmt.Sprintf("containerRuntimeExecutors[%d]", i), s, backends)...)
	}
	for _, b := range backends {
		errs = append(errs, b.CheckConfig(c)...)
	}
	if !slices.Contains([]string{ImageVolumeAuto, ImageVolumeAlways, ImageVolumeNever}, c.EmissaryImageVolume) {
		errs = append(errs, fmt.Errorf("emissaryImageVolume: unknown value %q (want %s, %s or %s)", c.EmissaryImageVolume, ImageVolumeAuto, ImageVolumeAlways, ImageVolumeNever))
	}
	if !slices.Contains([]string{workflow.SidecarModeNative, workflow.SidecarModeLegacy}, c.SidecarMode) {
		errs = append(errs, fmt.Errorf("sidecarMode: unknown mode %q (want %s or %s)", c.SidecarMode, workflow.SidecarModeNative, workflow.SidecarModeLegacy))
	}
	errs = append(errs, checkExecutorSpec(&c.Executor)...)
	errs = append(errs, checkRepository(&c.ArtifactRepository)...)
	errs = append(errs, checkS3(c.ArtifactRepository.S3)...)
	errs = append(errs, checkGCS(c.ArtifactRepository.GCS)...)
	errs = append(errs, checkArtifactory(c.ArtifactRepository.Artifactory)...)
	errs = append(errs, checkOSS(c.ArtifactRepository.OSS)...)
	return errors.Join(errs...)
}

func checkExecutorName(key, name string, backends []Backend) error {
	names := BackendNames(backends)
	if slices.Contains(names, name) {
		return nil
	}
	if slices.Contains(argoOnlyExecutors(backends), name) {
		return fmt.Errorf("%s: %w", key, errArgoOnlyExecutor(name, backends))
	}
	return fmt.Errorf("%s: unknown executor %q (want %s)", key, name, OneOf(names))
}

// BackendNames lists the backends' names, sorted.
func BackendNames(backends []Backend) []string {
	names := make([]string, 0, len(backends))
	for _, b := range backends {
		names = append(names, b.Name())
	}
	slices.Sort(names)
	return names
}

// OneOf lists names for a message: "docker, k8sapi or kubelet".
func OneOf(names []string) string {
	switch len(names) {
	case 0:
		return "no backend: none is registered"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// argoOnlyExecutors are Argo v3.3's executors that none of backends
// implements. A containerRuntimeExecutors entry may name one (Argo's
// quick-start ConfigMap lists emissary and pns), and it is refused only for
// a workflow it picks.
func argoOnlyExecutors(backends []Backend) []string {
	names := BackendNames(backends)
	var out []string
	for _, n := range []string{"emissary", "pns"} {
		if !slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}

// errArgoOnlyExecutor says that name is one of Argo's executors that
// argoexec does not implement, and which it does.
func errArgoOnlyExecutor(name string, backends []Backend) error {
	return fmt.Errorf("executor %q is Argo's, not implemented by argoexec (it implements %s): pick one of those with the label %s or containerRuntimeExecutor, or run this workflow with Argo's own executor image",
		name, OneOf(BackendNames(backends)), workflow.LabelContainerRuntimeExecutor)
}

// checkSelectorName accepts what checkExecutorName does and Argo's
// executors that argoexec does not implement (Select refuses those when
// they pick a workflow's backend).
func checkSelectorName(key, name string, backends []Backend) error {
	if slices.Contains(argoOnlyExecutors(backends), name) {
		return nil
	}
	return checkExecutorName(key, name, backends)
}

func checkSelector(key string, s ExecutorSelector, backends []Backend) []error {
	errs := []error{checkSelectorName(key+".name", s.Name, backends)}
	if len(s.Selector.MatchLabels) == 0 && len(s.Selector.MatchExpressions) == 0 {
		errs = append(errs, fmt.Errorf("%s.selector: empty selector matches every workflow; set containerRuntimeExecutor instead", key))
	} else if _, err := metav1.LabelSelectorAsSelector(&s.Selector); err != nil {
		errs = append(errs, fmt.Errorf("%s.selector: %w", key, err))
	}
	return errs
}

// CheckAbsPath refuses p, the value of key, unless it is an absolute path.
func CheckAbsPath(key, p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("%s: %q is not an absolute path", key, p)
	}
	return nil
}

func checkExecutorSpec(e *corev1.Container) []error {
	var errs []error
	if e.Name != "" {
		errs = append(errs, fmt.Errorf("executor.name: %q is not allowed: the pod builder names the containers init and wait", e.Name))
	}
	switch e.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, fmt.Errorf("executor.imagePullPolicy: unknown policy %q (want Always, IfNotPresent or Never)", e.ImagePullPolicy))
	}
	for i, env := range e.Env {
		if strings.HasPrefix(env.Name, "ARGO_") {
			errs = append(errs, fmt.Errorf("executor.env[%d].name: %s is reserved: the pod builder sets ARGO_* variables from the other keys", i, env.Name))
		}
	}
	if len(e.VolumeMounts) > 0 {
		errs = append(errs, errors.New("executor.volumeMounts: not supported: the pod builder adds wait's volumes; for the kubelet CA set kubeletCAFile"))
	}
	return errs
}

// notImplemented is the error for an Argo setting this controller does
// not implement: it names the key and what to do instead.
func notImplemented(key, instead string) error {
	return fmt.Errorf("%s: not supported by argoexec-step; Argo's controller handles it (%s)", key, instead)
}

// checkRepository refuses the repository kinds and settings of Argo's that
// argoexec-step does not implement (ignoring them would store
// artifacts elsewhere, or otherwise, than the ConfigMap says), more than
// one kind, and archiveLogs without a repository.
func checkRepository(r *workflow.ArtifactRepository) []error {
	var errs []error
	if r.HDFS != nil {
		errs = append(errs, notImplemented("artifactRepository.hdfs", "argoexec has no hdfs store: use artifactRepository.s3, gcs, artifactory or oss"))
	}
	var kinds []string
	for _, kind := range []struct {
		name string
		set  bool
	}{{"s3", r.S3 != nil}, {"gcs", r.GCS != nil}, {"artifactory", r.Artifactory != nil}, {"oss", r.OSS != nil}} {
		if kind.set {
			kinds = append(kinds, kind.name)
		}
	}
	if len(kinds) > 1 {
		errs = append(errs, fmt.Errorf("artifactRepository: %s are set: outputs go to one repository, set one of them", strings.Join(kinds, ", ")))
	}
	if r.ArchiveLogs != nil && *r.ArchiveLogs && len(kinds) == 0 {
		errs = append(errs, errors.New("artifactRepository.archiveLogs: true, but there is no repository to save main's log to: set artifactRepository.s3 (or gcs, artifactory or oss)"))
	}
	if r.S3 == nil {
		return errs
	}
	const key = "artifactRepository.s3."
	s3 := r.S3
	if s3.RoleARN != "" {
		errs = append(errs, notImplemented(key+"roleARN", "set accessKeySecret and secretKeySecret"))
	}
	if s3.UseSDKCreds {
		errs = append(errs, notImplemented(key+"useSDKCreds", "set accessKeySecret and secretKeySecret"))
	}
	if s3.CreateBucketIfNotPresent != nil {
		errs = append(errs, notImplemented(key+"createBucketIfNotPresent", "create the bucket beforehand"))
	}
	if s3.EncryptionOptions != nil {
		errs = append(errs, notImplemented(key+"encryptionOptions", "use the bucket's default encryption"))
	}
	if s3.KeyPrefix != "" {
		errs = append(errs, notImplemented(key+"keyPrefix", "deprecated in Argo: use keyFormat"))
	}
	return errs
}

func checkS3(s3 *workflow.S3ArtifactRepository) []error {
	if s3 == nil {
		return nil
	}
	const key = "artifactRepository.s3"
	var errs []error
	if s3.Endpoint == "" {
		errs = append(errs, fmt.Errorf("%s.endpoint: must be set (host[:port])", key))
	} else if strings.Contains(s3.Endpoint, "://") {
		errs = append(errs, fmt.Errorf("%s.endpoint: %q must be host[:port] without a scheme; use insecure: true for plain HTTP", key, s3.Endpoint))
	}
	if s3.Bucket == "" {
		errs = append(errs, fmt.Errorf("%s.bucket: must be set", key))
	}
	errs = append(errs, checkSecretRef(key+".accessKeySecret", s3.AccessKeySecret), checkSecretRef(key+".secretKeySecret", s3.SecretKeySecret))
	if (s3.AccessKeySecret == nil) != (s3.SecretKeySecret == nil) {
		errs = append(errs, fmt.Errorf("%s: set both accessKeySecret and secretKeySecret, or neither", key))
	}
	if unknown := workflow.UnknownKeyFormatVariables(s3.KeyFormat); len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("%s.keyFormat: unknown variable %s in %q (want %s)", key, strings.Join(unknown, ", "), s3.KeyFormat, strings.Join(workflow.KeyFormatVariables(), ", ")))
	}
	return errs
}

func checkGCS(gcs *workflow.GCSArtifactRepository) []error {
	if gcs == nil {
		return nil
	}
	const key = "artifactRepository.gcs"
	var errs []error
	if gcs.Bucket == "" {
		errs = append(errs, fmt.Errorf("%s.bucket: must be set", key))
	}
	if err := checkSecretRef(key+".serviceAccountKeySecret", gcs.ServiceAccountKeySecret); err != nil {
		errs = append(errs, err)
	}
	if unknown := workflow.UnknownKeyFormatVariables(gcs.KeyFormat); len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("%s.keyFormat: unknown variable %s in %q (want %s)", key, strings.Join(unknown, ", "), gcs.KeyFormat, strings.Join(workflow.KeyFormatVariables(), ", ")))
	}
	return errs
}

func checkArtifactory(a *workflow.ArtifactoryArtifactRepository) []error {
	if a == nil {
		return nil
	}
	const key = "artifactRepository.artifactory"
	var errs []error
	if u, err := url.Parse(a.RepoURL); a.RepoURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("%s.repoURL: %q is not an absolute http(s) URL, e.g. https://artifactory.example/artifactory/generic-local", key, a.RepoURL))
	}
	errs = append(errs, checkSecretRef(key+".usernameSecret", a.UsernameSecret), checkSecretRef(key+".passwordSecret", a.PasswordSecret))
	if (a.UsernameSecret == nil) != (a.PasswordSecret == nil) {
		errs = append(errs, fmt.Errorf("%s: set both usernameSecret and passwordSecret, or neither", key))
	}
	return errs
}

func checkOSS(o *workflow.OSSArtifactRepository) []error {
	if o == nil {
		return nil
	}
	const key = "artifactRepository.oss"
	var errs []error
	if o.Endpoint == "" {
		errs = append(errs, fmt.Errorf("%s.endpoint: must be set (host[:port], or http:// or https:// with it)", key))
	}
	if o.Bucket == "" {
		errs = append(errs, fmt.Errorf("%s.bucket: must be set", key))
	}
	errs = append(errs, checkSecretRef(key+".accessKeySecret", o.AccessKeySecret), checkSecretRef(key+".secretKeySecret", o.SecretKeySecret))
	if (o.AccessKeySecret == nil) != (o.SecretKeySecret == nil) {
		errs = append(errs, fmt.Errorf("%s: set both accessKeySecret and secretKeySecret, or neither", key))
	}
	if unknown := workflow.UnknownKeyFormatVariables(o.KeyFormat); len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("%s.keyFormat: unknown variable %s in %q (want %s)", key, strings.Join(unknown, ", "), o.KeyFormat, strings.Join(workflow.KeyFormatVariables(), ", ")))
	}
	return errs
}

func checkSecretRef(key string, ref *corev1.SecretKeySelector) error {
	switch {
	case ref == nil:
		return nil
	case ref.Name == "":
		return fmt.Errorf("%s.name: must be set", key)
	case ref.Key == "":
		return fmt.Errorf("%s.key: must be set", key)
	}
	return nil
}
