package artifacts

import (
	"strings"
	"testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestRepositoryOnlyPerStore: under RepositoryOnly the oss and
// artifactory stores are built when the repository is of their kind and
// then allow only its bucket (oss) or URLs under its repoURL
// (artifactory); a refusal names the artifact, the store and the
// repository setting. With a repository of another kind, the store is not
// configured.
func TestRepositoryOnlyPerStore(t *testing.T) {
	ossRepo := wf.ArtifactLocation{OSS: &wf.OSSArtifact{OSSBucket: wf.OSSBucket{Endpoint: "http://oss:9000", Bucket: "repo"}}}
	rtRepo := wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "http://rt:8081/generic/"}}
	locate := func(t *testing.T, def wf.ArtifactLocation, kind string, art wf.Artifact) error {
		t.Helper()
		k, _ := kindOf(kind)
		d, err := k.New(Env{Default: def, RepositoryOnly: true, Credentials: StaticKeys{}, Log: discard()})
		if err != nil || d == nil {
			t.Fatalf("%s store under RepositoryOnly with a %s repository: %v, %v", kind, kind, d, err)
		}
		switch d := d.(type) {
		case *OSS:
			_, err = d.location(art)
		case *Artifactory:
			_, _, err = d.location(art)
		default:
			t.Fatalf("%s driver is %T", kind, d)
		}
		return err
	}
	for _, tt := range []struct {
		name    string
		def     wf.ArtifactLocation
		kind    string
		art     wf.Artifact
		wantErr string
	}{
		{name: "oss: a key alone", def: ossRepo, kind: wf.KindOSS, art: wf.Artifact{Name: "a", OSS: &wf.OSSArtifact{Key: "k"}}},
		{name: "oss: the repository's bucket", def: ossRepo, kind: wf.KindOSS, art: ossArt("http://oss:9000", "repo", "k")},
		{name: "oss: another bucket", def: ossRepo, kind: wf.KindOSS, art: ossArt("http://oss:9000", "other", "k"),
			wantErr: `oss: artifact "art": bucket "other" at "http://oss:9000" is not the artifact repository's (artifactRepository.oss: bucket "repo" at "http://oss:9000")`},
		{name: "oss: the bucket at another endpoint", def: ossRepo, kind: wf.KindOSS, art: ossArt("http://elsewhere:9000", "repo", "k"),
			wantErr: `bucket "repo" at "http://elsewhere:9000" is not the artifact repository's`},
		{name: "artifactory: under the repoURL", def: rtRepo, kind: wf.KindArtifactory, art: rtArt("http://rt:8081/generic/wf/pod/out.tgz")},
		{name: "artifactory: a path alone takes the repository's host", def: rtRepo, kind: wf.KindArtifactory, art: wf.Artifact{Name: "a", Artifactory: &wf.ArtifactoryArtifact{URL: "/generic/x"}}},
		{name: "artifactory: another repository on the host", def: rtRepo, kind: wf.KindArtifactory, art: rtArt("http://rt:8081/generic-other/x"),
			wantErr: `is not under the artifact repository's URL (artifactRepository.artifactory.repoURL: http://rt:8081/generic/)`},
		{name: "artifactory: climbing out with ..", def: rtRepo, kind: wf.KindArtifactory, art: rtArt("http://rt:8081/generic/../secret/x"),
			wantErr: `artifactory: artifact "art": http://rt:8081/generic/../secret/x is not under the artifact repository's URL`},
		{name: "artifactory: another host", def: rtRepo, kind: wf.KindArtifactory, art: rtArt("http://evil:8081/generic/x"),
			wantErr: `is not under the artifact repository's URL`},
		{name: "artifactory: https for an http repoURL", def: rtRepo, kind: wf.KindArtifactory, art: rtArt("https://rt:8081/generic/x"),
			wantErr: `is not under the artifact repository's URL`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := locate(t, tt.def, tt.kind, tt.art)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("location: %v, want allowed", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("location: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	for _, kind := range []string{wf.KindOSS, wf.KindArtifactory} {
		k, _ := kindOf(kind)
		s3Repo := wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:1", Bucket: "b"}}}
		if d, err := k.New(Env{Default: s3Repo, RepositoryOnly: true, Log: discard()}); err != nil || d != nil {
			t.Errorf("%s store under RepositoryOnly with an s3 repository: %v, %v; want none", kind, d, err)
		}
	}
}
