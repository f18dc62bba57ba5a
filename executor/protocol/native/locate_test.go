package native

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func TestKeyFormatLocator(t *testing.T) {
	sel := func(name, key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	s3 := &wf.ArtifactRepository{S3: &wf.S3ArtifactRepository{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b",
		AccessKeySecret: sel("s3", "a"), SecretKeySecret: sel("s3", "s")}}}
	flat := &wf.ArtifactRepository{S3: &wf.S3ArtifactRepository{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}, KeyFormat: "{{workflow.name}}-{{artifact.name}}"}}
	gcs := &wf.ArtifactRepository{GCS: &wf.GCSArtifactRepository{GCSBucket: wf.GCSBucket{Bucket: "g", ServiceAccountKeySecret: sel("sa", "key.json")}}}
	auth := wf.ArtifactoryAuth{UsernameSecret: sel("rt", "user"), PasswordSecret: sel("rt", "pass")}
	rt := &wf.ArtifactoryArtifactRepository{ArtifactoryAuth: auth, RepoURL: "http://rt:8081/generic/repo/"}
	ossBucket := wf.OSSBucket{Endpoint: "oss:7070", Bucket: "o", AccessKeySecret: sel("oss", "a"), SecretKeySecret: sel("oss", "s")}
	oss := &wf.ArtifactRepository{OSS: &wf.OSSArtifactRepository{OSSBucket: ossBucket, KeyFormat: "{{workflow.name}}/{{artifact.name}}"}}
	vars := flow.KeyVars{WorkflowName: "wf", PodName: "pod"}
	tests := []struct {
		name    string
		repo    *wf.ArtifactRepository
		a       wf.Artifact
		want    wf.ArtifactLocation
		wantErr error
	}{
		{name: "s3: the keyFormat, the bucket without its secrets", repo: s3, a: wf.Artifact{Name: "out"},
			want: wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}, Key: "wf/pod/out.tgz"}}},
		{name: "s3: main's log beside the artifacts, as main.log", repo: s3, a: wf.Artifact{Name: wf.MainLogsArtifactName},
			want: wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}, Key: "wf/pod/main.log"}}},
		{name: "s3: main's log under a keyFormat without directories", repo: flat, a: wf.Artifact{Name: wf.MainLogsArtifactName},
			want: wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}, Key: "wf-main-logs.log"}}},
		{name: "s3: an output with a key of its own stays there", repo: s3, a: wf.Artifact{Name: "out", S3: &wf.S3Artifact{Key: "mine/out.tgz"}},
			want: wf.ArtifactLocation{S3: &wf.S3Artifact{Key: "mine/out.tgz"}}},
		{name: "gcs: the default keyFormat in its bucket", repo: gcs, a: wf.Artifact{Name: "out"},
			want: wf.ArtifactLocation{GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "g"}, Key: "wf/pod/out.tgz"}}},
		{name: "artifactory: the repoURL's path joined with the key, the secrets' names kept", repo: &wf.ArtifactRepository{Artifactory: rt}, a: wf.Artifact{Name: "out"},
			want: wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{ArtifactoryAuth: auth, URL: "http://rt:8081/generic/repo/wf/pod/out.tgz"}}},
		{name: "artifactory: main's log", repo: &wf.ArtifactRepository{Artifactory: rt}, a: wf.Artifact{Name: wf.MainLogsArtifactName},
			want: wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{ArtifactoryAuth: auth, URL: "http://rt:8081/generic/repo/wf/pod/main.log"}}},
		{name: "artifactory: an output with its own URL stays there", repo: s3,
			a:    wf.Artifact{Name: "out", Artifactory: &wf.ArtifactoryArtifact{URL: "http://other/generic/x.tgz"}},
			want: wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "http://other/generic/x.tgz"}}},
		{name: "oss: its keyFormat, the bucket and the secrets' names", repo: oss, a: wf.Artifact{Name: "out"},
			want: wf.ArtifactLocation{OSS: &wf.OSSArtifact{OSSBucket: ossBucket, Key: "wf/out"}}},
		{name: "no repository", a: wf.Artifact{Name: "out"}, wantErr: flow.ErrNoRepository},
		{name: "only hdfs, which our pod builder does not implement", repo: &wf.ArtifactRepository{HDFS: &wf.HDFSArtifactRepository{}}, a: wf.Artifact{Name: "out"}, wantErr: flow.ErrNoRepository},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, rep, err := KeyFormatLocator{Repository: tt.repo}.Locate(tt.a, vars)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, up.Location()); diff != "" {
				t.Errorf("upload to (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, rep.Location()); diff != "" {
				t.Errorf("reported (-want +got):\n%s", diff)
			}
			if up.Name != tt.a.Name {
				t.Errorf("name %q, want %q", up.Name, tt.a.Name)
			}
		})
	}
}
