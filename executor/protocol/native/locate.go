package native

import (
	"fmt"
	"path"
	"strings"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// KeyFormatLocator is our controller's rule: an output with a key of its
// own (an s3, gcs or oss key, an artifactory URL's path) goes there, as
// Argo's rule has it (the store allows only the repository's bucket for
// s3 and gcs); every other output goes to the ConfigMap's repository under
// its keyFormat, and the report carries the
// whole location (our controller passes it on as is; for artifactory and
// oss with the names of the secrets, never their values, so that a later
// step's input names them). Main's log (the flow's artifact
// workflow.MainLogsArtifactName, archiveLogs) is stored, as Argo's argoexec
// stores it, as main.log beside the step's artifacts: in the directory of
// the key the keyFormat gives it (by default WORKFLOW/POD/main.log).
type KeyFormatLocator struct {
	// Repository is the ConfigMap's artifactRepository; nil means none.
	Repository *wf.ArtifactRepository
}

// repositoryLocation is where r stores artifacts, with the key that
// outputs' keys are joined to (an artifactory repoURL's path), and its
// keyFormat; ok is false when r has no kind our pod builder implements.
func repositoryLocation(r *wf.ArtifactRepository) (loc wf.ArtifactLocation, format string, ok bool) {
	switch {
	case r == nil:
		return loc, "", false
	case r.S3 != nil:
		loc.S3 = &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: r.S3.Endpoint, Bucket: r.S3.Bucket, Region: r.S3.Region, Insecure: r.S3.Insecure}}
		format = r.S3.KeyFormat
	case r.GCS != nil:
		loc.GCS = &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: r.GCS.Bucket}}
		format = r.GCS.KeyFormat
	case r.OSS != nil:
		loc.OSS = &wf.OSSArtifact{OSSBucket: r.OSS.OSSBucket}
		format = r.OSS.KeyFormat
	case r.Artifactory != nil:
		loc.Artifactory = &wf.ArtifactoryArtifact{ArtifactoryAuth: r.Artifactory.ArtifactoryAuth, URL: strings.TrimSuffix(r.Artifactory.RepoURL, "/") + "/"}
	default:
		return loc, "", false
	}
	if format == "" {
		format = wf.DefaultKeyFormat
	}
	return loc, format, true
}

// Locate implements flow.ArtifactLocator.
func (l KeyFormatLocator) Locate(a wf.Artifact, v flow.KeyVars) (wf.Artifact, wf.Artifact, error) {
	if key, err := a.Location().Key(); err == nil && key != "" {
		return a, a, nil
	}
	repo, format, ok := repositoryLocation(l.Repository)
	if !ok {
		return a, a, flow.ErrNoRepository
	}
	key, err := wf.ExpandKeyFormat(format, map[string]string{
		wf.KeyVarWorkflowName: v.WorkflowName, wf.KeyVarPodName: v.PodName,
		wf.KeyVarPodNamespace: v.PodNamespace, wf.KeyVarTemplateName: v.TemplateName,
		wf.KeyVarArtifactName: a.Name,
	})
	if err != nil {
		return a, a, err
	}
	if a.Name == wf.MainLogsArtifactName {
		if dir := path.Dir(key); dir != "." {
			key = path.Join(dir, wf.MainLogFileName)
		} else {
			key += path.Ext(wf.MainLogFileName)
		}
	}
	prefix, err := repo.Key()
	if err != nil {
		return a, a, fmt.Errorf("the artifact repository: %w", err)
	}
	if prefix != "" {
		key = path.Join(prefix, key)
	}
	at, err := repo.WithKey(key)
	if err != nil {
		return a, a, fmt.Errorf("the artifact repository: %w", err)
	}
	a.SetLocation(at)
	return a, a, nil
}

// NoRepositoryHint implements flow.ArtifactLocator.
func (KeyFormatLocator) NoRepositoryHint() string {
	return "set artifactRepository.s3 (or gcs, artifactory or oss) in the argoexec-step ConfigMap"
}
