package native

import (
	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// KeyFormatLocator is our controller's rule: every output goes to the
// ConfigMap's repository under its keyFormat, and the report carries the
// whole location (our controller passes it on as is).
type KeyFormatLocator struct {
	// Repository is the ConfigMap's artifactRepository.s3; nil means none.
	Repository *wf.S3ArtifactRepository
	// GCS is the ConfigMap's artifactRepository.gcs, used when Repository
	// is nil; nil means none.
	GCS *wf.GCSArtifactRepository
}

// Locate implements flow.ArtifactLocator.
func (l KeyFormatLocator) Locate(a wf.Artifact, v flow.KeyVars) (wf.Artifact, wf.Artifact, error) {
	var format string
	switch {
	case l.Repository != nil:
		format = l.Repository.KeyFormat
	case l.GCS != nil:
		format = l.GCS.KeyFormat
	default:
		return a, a, flow.ErrNoRepository
	}
	if format == "" {
		format = wf.DefaultKeyFormat
	}
	key, err := wf.ExpandKeyFormat(format, map[string]string{
		wf.KeyVarWorkflowName: v.WorkflowName, wf.KeyVarPodName: v.PodName,
		wf.KeyVarPodNamespace: v.PodNamespace, wf.KeyVarTemplateName: v.TemplateName,
		wf.KeyVarArtifactName: a.Name,
	})
	if err != nil {
		return a, a, err
	}
	if r := l.Repository; r != nil {
		a.S3 = &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: r.Endpoint, Bucket: r.Bucket, Region: r.Region, Insecure: r.Insecure}, Key: key}
	} else {
		a.GCS = &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: l.GCS.Bucket}, Key: key}
	}
	return a, a, nil
}

// NoRepositoryHint implements flow.ArtifactLocator.
func (KeyFormatLocator) NoRepositoryHint() string {
	return "set artifactRepository.s3 (or artifactRepository.gcs) in the argoexec-step ConfigMap"
}
