package executor

import (
	"errors"
	"path"
	"strings"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// ArtifactLocator says where an output artifact is uploaded and how the
// report names it: the controller that built the pod decides both.
type ArtifactLocator interface {
	// Locate returns a with the S3 location to upload to, and a as the
	// outputs report must show it once uploaded.
	Locate(a wf.Artifact, vars KeyVars) (upload, reported wf.Artifact, err error)
}

// KeyVars are what an artifact key may be made of.
type KeyVars struct {
	WorkflowName, PodName, PodNamespace, TemplateName string
}

// errNoRepository is wrapped by Locate errors for an artifact with no
// location of its own and no repository to put it in.
var errNoRepository = errors.New("no artifact repository")

// KeyFormatLocator is our controller's rule: every output goes to the
// ConfigMap's repository under its keyFormat, and the report carries the
// whole location (our controller passes it on as is).
type KeyFormatLocator struct {
	// Repository is the ConfigMap's artifactRepository.s3; nil means none.
	Repository *wf.S3ArtifactRepository
}

// Locate implements ArtifactLocator.
func (l KeyFormatLocator) Locate(a wf.Artifact, v KeyVars) (wf.Artifact, wf.Artifact, error) {
	if l.Repository == nil {
		return a, a, errNoRepository
	}
	format := l.Repository.KeyFormat
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
	r := l.Repository
	a.S3 = &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: r.Endpoint, Bucket: r.Bucket, Region: r.Region, Insecure: r.Insecure}, Key: key}
	return a, a, nil
}

// ArchiveLocationLocator is Argo Workflows v3.3's rule: an artifact with a
// key of its own goes there (its bucket, or the archive location's);
// otherwise to the template's archiveLocation under KEY/NAME.tgz, or
// KEY/BASENAME with `archive: none`, and the report names it by the key
// alone: Argo's controller fills bucket and credentials back in from its
// archiveLocation where the artifact is consumed.
type ArchiveLocationLocator struct {
	// Location is the template's archiveLocation.s3; nil means none.
	Location *wf.S3Artifact
}

// Locate implements ArtifactLocator.
func (l ArchiveLocationLocator) Locate(a wf.Artifact, _ KeyVars) (wf.Artifact, wf.Artifact, error) {
	if a.S3 != nil && a.S3.Key != "" {
		return a, a, nil // the driver fills what the artifact leaves out from the archive location
	}
	if l.Location == nil {
		return a, a, errNoRepository
	}
	name := a.Name + ".tgz"
	if a.Archive != nil && a.Archive.None != nil {
		name = path.Base(a.Path)
	}
	key := path.Join(strings.TrimSuffix(l.Location.Key, "/"), name)
	upload, reported := a, a
	upload.S3 = &wf.S3Artifact{S3Bucket: l.Location.S3Bucket, Key: key}
	reported.S3 = &wf.S3Artifact{Key: key}
	return upload, reported, nil
}
