package argo

import (
	"fmt"
	"path"
	"strings"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// ArchiveLocationLocator is Argo Workflows v3.3's rule: an artifact with a
// key of its own goes there (its bucket, or the archive location's);
// otherwise to the template's archiveLocation under KEY/NAME.tgz, or
// KEY/BASENAME with `archive: none`, and the report names it by the key
// alone: Argo's controller fills bucket and credentials back in from its
// archiveLocation where the artifact is consumed.
type ArchiveLocationLocator struct {
	// Location is the template's archiveLocation; nil means none.
	Location *wf.ArtifactLocation
}

// Locate implements flow.ArtifactLocator.
func (l ArchiveLocationLocator) Locate(a wf.Artifact, _ flow.KeyVars) (wf.Artifact, wf.Artifact, error) {
	if a.S3 != nil && a.S3.Key != "" {
		return a, a, nil // the driver fills what the artifact leaves out from the archive location
	}
	if l.Location == nil || l.Location.Kind() == "" {
		return a, a, flow.ErrNoRepository
	}
	loc := l.Location.S3
	if loc == nil {
		return a, a, fmt.Errorf("the template's archiveLocation is %s: %w: argoexec saves outputs to s3 archive locations only; set artifactRepository.s3 in Argo's workflow-controller-configmap, or give the artifact its own s3 location",
			l.Location.Kind(), artifacts.ErrNotSupported)
	}
	name := a.Name + ".tgz"
	if a.Archive != nil && a.Archive.None != nil {
		name = path.Base(a.Path)
	}
	key := path.Join(strings.TrimSuffix(loc.Key, "/"), name)
	upload, reported := a, a
	upload.S3 = &wf.S3Artifact{S3Bucket: loc.S3Bucket, Key: key}
	reported.S3 = &wf.S3Artifact{Key: key}
	return upload, reported, nil
}

// NoRepositoryHint implements flow.ArtifactLocator.
func (ArchiveLocationLocator) NoRepositoryHint() string {
	return "the template has no archiveLocation: set artifactRepository in Argo's workflow-controller-configmap (or an artifactRepositoryRef), or give each artifact its own s3 location"
}
