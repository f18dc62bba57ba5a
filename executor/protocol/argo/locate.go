package argo

import (
	"fmt"
	"path"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// ArchiveLocationLocator is Argo Workflows v3.3's rule: an artifact with a
// key of its own goes there (its bucket or URL, or the archive location's:
// for artifactory the key is the URL's path); otherwise to the template's
// archiveLocation under KEY/NAME.tgz, or KEY/BASENAME with `archive:
// none` (for artifactory, the archiveLocation's URL with NAME.tgz appended
// to its path), and the report names it by the key alone (for artifactory
// a URL that is only that path), as Argo's argoexec reports it: Argo's
// controller fills bucket, host and credentials back in from its
// archiveLocation where the artifact is consumed.
type ArchiveLocationLocator struct {
	// Location is the template's archiveLocation; nil means none.
	Location *wf.ArtifactLocation
}

// Locate implements flow.ArtifactLocator. Which field holds a kind's key
// is wf.ArtifactLocation's to know (Key, WithKey, KeyOnly): no case here
// names a store.
func (l ArchiveLocationLocator) Locate(a wf.Artifact, _ flow.KeyVars) (wf.Artifact, wf.Artifact, error) {
	if key, err := a.Location().Key(); err == nil && key != "" {
		return a, a, nil // the driver fills what the artifact leaves out from the archive location
	}
	if l.Location == nil || l.Location.Kind() == "" {
		return a, a, flow.ErrNoRepository
	}
	prefix, err := l.Location.Key()
	if err != nil {
		return a, a, fmt.Errorf("the template's archiveLocation is %s, which has no key to save under: %w: set artifactRepository.s3 in Argo's workflow-controller-configmap, or give the artifact its own s3 location",
			l.Location.Kind(), artifacts.ErrNotSupported)
	}
	name := a.Name + ".tgz"
	if a.Archive != nil && a.Archive.None != nil {
		name = path.Base(a.Path)
	}
	key := path.Join(prefix, name) // Argo: AppendToKey, SetKey(path.Join(GetKey(), NAME))
	repo := *l.Location
	repo.ArchiveLogs = nil
	up, err := repo.WithKey(key)
	if err != nil {
		return a, a, fmt.Errorf("the template's archiveLocation: %w", err)
	}
	rep, err := repo.KeyOnly(key)
	if err != nil {
		return a, a, fmt.Errorf("the template's archiveLocation: %w", err)
	}
	upload, reported := a, a
	up.ArchiveLogs, rep.ArchiveLogs = a.ArchiveLogs, a.ArchiveLogs
	upload.SetLocation(up)
	reported.SetLocation(rep)
	return upload, reported, nil
}

// NoRepositoryHint implements flow.ArtifactLocator.
func (ArchiveLocationLocator) NoRepositoryHint() string {
	return "the template has no archiveLocation: set artifactRepository in Argo's workflow-controller-configmap (or an artifactRepositoryRef), or give each artifact its own s3 location"
}
