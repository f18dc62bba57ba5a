// Package native is the side of the pod of argoexec's own pod builder
// (pkg/podspec, argoexec-step): the template in the pod annotation
// workflows.argoproj.io/template projected as a file, the repository and
// its s3 or gcs keys in argoexec's own variables (the secrets of git,
// artifactory and oss as files under SecretsDir), outputs in the pod annotation
// workflows.argoproj.io/outputs, and SIGTERM to wait as the kubelet's
// (the kubelet is already stopping the pod's containers).
package native

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/protocol"
	"github.com/argoexec/argoexec/executor/report"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// Name names this protocol in logs.
const Name = "argoexec"

// Protocol is argoexec's own pod builder's side of the pod; the zero value
// is ready for Complete.
type Protocol struct {
	// TemplatePath is the template file (ARGO_TEMPLATE_PATH, else
	// workflow.TemplateFile).
	TemplatePath string
	// SidecarMode is native or legacy (ARGO_SIDECAR_MODE, else native).
	SidecarMode string
	// ArtifactRepository is the repository as JSON, without credentials
	// (ARGO_ARTIFACT_REPOSITORY).
	ArtifactRepository string
	// S3AccessKey and S3SecretKey are the repository's keys.
	S3AccessKey, S3SecretKey string
	// GCSServiceAccountKey is a gcs repository's service-account JSON key
	// (ARGO_GCS_SERVICE_ACCOUNT_KEY); empty means workload identity.
	GCSServiceAccountKey string
	// GCS is where gcs artifacts go when not to Google's servers
	// (STORAGE_EMULATOR_HOST, GCE_METADATA_HOST, set by the ConfigMap's
	// executor.env).
	GCS artifacts.GCSEndpoints
	// SecretsRoot is where the secret files are; empty means SecretsDir
	// (a test's directory otherwise).
	SecretsRoot string
}

// Name implements protocol.Protocol.
func (*Protocol) Name() string { return Name }

// OwnEnv implements protocol.Protocol: variables argoexec's pod builder
// sets and Argo's controller never does.
func (*Protocol) OwnEnv() []string {
	return []string{wf.EnvTemplatePath, wf.EnvPodNamespace, wf.EnvArtifactRepository, wf.EnvS3AccessKey, wf.EnvS3SecretKey, wf.EnvGCSServiceAccountKey, wf.EnvSidecarMode}
}

// Complete implements protocol.Protocol.
func (p *Protocol) Complete(_ string, getenv func(string) string) error {
	p.TemplatePath = getenv(wf.EnvTemplatePath)
	if p.TemplatePath == "" {
		p.TemplatePath = wf.TemplateFile
	}
	p.SidecarMode = getenv(wf.EnvSidecarMode)
	if p.SidecarMode == "" {
		p.SidecarMode = wf.SidecarModeNative
	}
	p.ArtifactRepository = getenv(wf.EnvArtifactRepository)
	p.S3AccessKey = getenv(wf.EnvS3AccessKey)
	p.S3SecretKey = getenv(wf.EnvS3SecretKey)
	p.GCSServiceAccountKey = getenv(wf.EnvGCSServiceAccountKey)
	p.GCS = artifacts.GCSEndpoints{EmulatorHost: getenv(wf.EnvStorageEmulatorHost), MetadataHost: getenv(wf.EnvGCEMetadataHost)}
	return nil
}

// Validate implements protocol.Protocol.
func (p *Protocol) Validate(cmd string) error {
	if p.SidecarMode != wf.SidecarModeNative && p.SidecarMode != wf.SidecarModeLegacy {
		return fmt.Errorf("argoexec %s: %s=%q is not a sidecar mode (want native or legacy)", cmd, wf.EnvSidecarMode, p.SidecarMode)
	}
	if _, err := p.repository(); err != nil {
		return fmt.Errorf("argoexec %s: %w", cmd, err)
	}
	return nil
}

// Template implements protocol.Protocol: the --template file, else the
// projected annotation.
func (p *Protocol) Template(path string) (*wf.Template, error) {
	if path != "" {
		return protocol.ReadTemplate(path, "--template")
	}
	return protocol.ReadTemplate(p.TemplatePath, "the pod builder projects annotation "+wf.AnnotationTemplate+" there")
}

// Flow implements protocol.Protocol.
func (p *Protocol) Flow(req protocol.Request) (protocol.FlowParts, error) {
	parts := protocol.FlowParts{Config: flow.WorkflowConfig{
		Template:    req.Template,
		Step:        flow.StepRef{Pod: req.Pod.Name, Namespace: req.Pod.Namespace, Workflow: req.WorkflowName},
		SidecarMode: p.SidecarMode,
		Timing:      flow.Timing{KillGrace: req.KillGrace},
	}}
	repo, err := p.repository()
	if err != nil {
		return parts, err
	}
	// Our pod builder writes the effective archiveLogs (the repository's
	// true, else the template's) into the template's archiveLocation, as
	// Argo's controller does: one rule for both protocols.
	parts.Config.Protocol.ArchiveLogs = req.Template.SaveLogsAsArtifact()
	parts.Config.Protocol.Artifacts = KeyFormatLocator{Repository: repo}
	if parts.Store, err = p.store(repo, req.Log); err != nil {
		return parts, err
	}
	if req.RESTConfig != nil {
		if parts.Reporter, err = report.NewPodReporter(req.RESTConfig, req.Pod.Namespace, req.Pod.Name, req.Log); err != nil {
			return parts, err
		}
	}
	return parts, nil
}

// Main implements protocol.Protocol: the pod annotation, no deadline of
// its own, and the ConfigMap's repository and keys.
func (p *Protocol) Main(req protocol.Request) (protocol.MainParts, error) {
	rep, err := report.NewPodReporter(req.RESTConfig, req.Pod.Namespace, req.Pod.Name, req.Log)
	if err != nil {
		return protocol.MainParts{}, err
	}
	parts := protocol.MainParts{Reporter: rep}
	repo, err := p.repository()
	if err != nil {
		return parts, err
	}
	if def, _, ok := repositoryLocation(repo); ok {
		parts.DataRepository = &def
	}
	parts.DataEnv, parts.DataAllow = p.artifactEnv(repo, req.Log)
	return parts, nil
}

// repository decodes ARGO_ARTIFACT_REPOSITORY; nil when none is set, which
// is not an error until an artifact needs it.
func (p *Protocol) repository() (*wf.ArtifactRepository, error) {
	if p.ArtifactRepository == "" {
		return nil, nil
	}
	repo := &wf.ArtifactRepository{}
	if err := json.Unmarshal([]byte(p.ArtifactRepository), repo); err != nil {
		return nil, fmt.Errorf("%s is not an artifact repository: %v", wf.EnvArtifactRepository, err)
	}
	return repo, nil
}

func (p *Protocol) keys() artifacts.Credentials {
	return repositoryKeys{StaticKeys: artifacts.StaticKeys{AccessKey: p.S3AccessKey, SecretKey: p.S3SecretKey}, gcsKey: p.GCSServiceAccountKey}
}

// repositoryKeys are the repository's credentials as the pod builder passes
// them: the S3 keys, and a gcs repository's service-account key, the one
// secret this pod holds.
type repositoryKeys struct {
	artifacts.StaticKeys
	gcsKey string
}

// Secret implements artifacts.SecretReader: the gcs repository's
// service-account key, for its serviceAccountKeySecret.
func (k repositoryKeys) Secret(field string, sel *corev1.SecretKeySelector) (string, error) {
	if field != "gcs.serviceAccountKeySecret" || k.gcsKey == "" {
		return "", fmt.Errorf("%s names secret %q, which this pod does not hold: for gcs, argoexec-step pods hold only the repository's key (artifactRepository.gcs.serviceAccountKeySecret)", field, sel.Name)
	}
	return k.gcsKey, nil
}

// SecretsDir is where our pod builder mounts the secret keys that git,
// artifactory and oss locations (and such a repository) name, as Argo's
// controller does: the key KEY of secret NAME is SecretsDir/NAME/KEY.
const SecretsDir = wf.ArgoSecretsPath

// repositoryKeyed are the stores whose credentials our pod builder passes
// as the repository's keys in the environment, and whose artifacts may
// use only the repository's bucket; every other store reads the secret
// files the pod builder mounts for what its artifacts (or the repository)
// name, under SecretsDir.
func repositoryKeyed() []string { return []string{wf.KindS3, wf.KindGCS} }

// store is the pod's store: s3 and gcs limited to the repository's bucket,
// whose keys the pod holds; git, artifactory and oss with the secret files
// under SecretsDir; http and raw as they are. Each kind's driver is built
// by its artifacts.Kind, as for Argo's controller.
func (p *Protocol) store(repo *wf.ArtifactRepository, log *logrus.Entry) (flow.ArtifactDriver, error) {
	envFor, allow := p.artifactEnv(repo, log)
	cfg := artifacts.StoreConfig{Drivers: map[string]artifacts.Driver{}, Allow: allow}
	for _, k := range artifacts.Kinds() {
		d, err := k.New(envFor(k.Name))
		if err != nil {
			return nil, fmt.Errorf("%s store: %w", k.Name, err)
		}
		if d != nil {
			cfg.Drivers[k.Name] = d
		}
	}
	return artifacts.NewStore(cfg, log), nil
}

// artifactEnv is what each kind's driver is built from (repositoryKeyed
// kinds with the repository's keys and bucket only; the others with the
// secret files), and the policy that keeps s3 to the repository's bucket.
func (p *Protocol) artifactEnv(repo *wf.ArtifactRepository, log *logrus.Entry) (func(kind string) artifacts.Env, artifacts.BucketPolicy) {
	def, _, _ := repositoryLocation(repo)
	keyed := artifacts.Env{Default: def, Credentials: p.keys(), RepositoryOnly: true, Log: log, GCS: p.GCS}
	own := artifacts.Env{Default: def, Credentials: artifacts.SecretFiles{Root: p.secretsDir()}, Log: log,
		Git: artifacts.GitCommand{SecretsDir: p.secretsDir()}}
	var allow artifacts.BucketPolicy
	if def.S3 != nil {
		allow = artifacts.RepositoryOnly(def.S3.S3Bucket)
	}
	return func(kind string) artifacts.Env {
		if slices.Contains(repositoryKeyed(), kind) {
			return keyed
		}
		return own
	}, allow
}

func (p *Protocol) secretsDir() string {
	if p.SecretsRoot != "" {
		return p.SecretsRoot
	}
	return SecretsDir
}
