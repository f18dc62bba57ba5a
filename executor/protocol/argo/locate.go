package argo

import (
	"fmt"
	"net/url"
	"path"
	"strings"

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

// Locate implements flow.ArtifactLocator.
func (l ArchiveLocationLocator) Locate(a wf.Artifact, _ flow.KeyVars) (wf.Artifact, wf.Artifact, error) {
	switch {
	case a.S3 != nil && a.S3.Key != "", a.OSS != nil && a.OSS.Key != "", a.Artifactory != nil && urlPath(a.Artifactory.URL) != "":
		return a, a, nil // the driver fills what the artifact leaves out from the archive location
	}
	if l.Location == nil || l.Location.Kind() == "" {
		return a, a, flow.ErrNoRepository
	}
	name := a.Name + ".tgz"
	if a.Archive != nil && a.Archive.None != nil {
		name = path.Base(a.Path)
	}
	upload, reported := a, a
	switch loc := l.Location; {
	case loc.S3 != nil:
		key := path.Join(strings.TrimSuffix(loc.S3.Key, "/"), name)
		upload.S3 = &wf.S3Artifact{S3Bucket: loc.S3.S3Bucket, Key: key}
		reported.S3 = &wf.S3Artifact{Key: key}
	case loc.OSS != nil:
		key := path.Join(loc.OSS.Key, name)
		upload.S3, upload.OSS = nil, &wf.OSSArtifact{OSSBucket: loc.OSS.OSSBucket, Key: key}
		reported.S3, reported.OSS = nil, &wf.OSSArtifact{Key: key}
	case loc.Artifactory != nil:
		u, err := url.Parse(loc.Artifactory.URL)
		if err != nil {
			return a, a, fmt.Errorf("the template's archiveLocation.artifactory.url %q: %w", loc.Artifactory.URL, err)
		}
		key := path.Join(u.Path, name) // Argo: SetKey(path.Join(GetKey(), NAME)), GetKey being the URL's path
		u.Path, u.RawPath = key, ""
		upload.S3, upload.Artifactory = nil, &wf.ArtifactoryArtifact{ArtifactoryAuth: loc.Artifactory.ArtifactoryAuth, URL: u.String()}
		reported.S3, reported.Artifactory = nil, &wf.ArtifactoryArtifact{URL: (&url.URL{Path: key}).String()}
	default:
		return a, a, fmt.Errorf("the template's archiveLocation is %s: %w: argoexec saves outputs to s3, oss and artifactory archive locations only; set artifactRepository.s3 in Argo's workflow-controller-configmap, or give the artifact its own s3 location",
			l.Location.Kind(), artifacts.ErrNotSupported)
	}
	return upload, reported, nil
}

// urlPath is the path of the URL s, Argo's key of an artifactory location;
// "" when s does not parse.
func urlPath(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Path
}

// NoRepositoryHint implements flow.ArtifactLocator.
func (ArchiveLocationLocator) NoRepositoryHint() string {
	return "the template has no archiveLocation: set artifactRepository in Argo's workflow-controller-configmap (or an artifactRepositoryRef), or give each artifact its own s3 location"
}
