package argo

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

func TestArchiveLocationLocator(t *testing.T) {
	s3 := &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "art"}, Key: "wf-1/wf-1-123"}
	archive := &wf.ArtifactLocation{S3: s3}
	vars := flow.KeyVars{WorkflowName: "wf", PodName: "pod"}
	tests := []struct {
		name         string
		l            flow.ArtifactLocator
		a            wf.Artifact
		wantUpload   wf.S3Artifact
		wantReported *wf.S3Artifact
		wantErr      error
	}{
		{name: "Argo: KEY/NAME.tgz, reported by key alone", l: ArchiveLocationLocator{Location: archive}, a: wf.Artifact{Name: "out", Path: "/tmp/out"},
			wantUpload: wf.S3Artifact{S3Bucket: s3.S3Bucket, Key: "wf-1/wf-1-123/out.tgz"}, wantReported: &wf.S3Artifact{Key: "wf-1/wf-1-123/out.tgz"}},
		{name: "Argo: archive none keeps the base name", l: ArchiveLocationLocator{Location: archive},
			a:          wf.Artifact{Name: "out", Path: "/tmp/hello.txt", Archive: &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}},
			wantUpload: wf.S3Artifact{S3Bucket: s3.S3Bucket, Key: "wf-1/wf-1-123/hello.txt"}, wantReported: &wf.S3Artifact{Key: "wf-1/wf-1-123/hello.txt"}},
		{name: "Argo: an artifact's own key is kept", l: ArchiveLocationLocator{Location: archive},
			a:          wf.Artifact{Name: "out", S3: &wf.S3Artifact{Key: "my/own.tgz"}},
			wantUpload: wf.S3Artifact{Key: "my/own.tgz"}, wantReported: &wf.S3Artifact{Key: "my/own.tgz"}},
		{name: "Argo: no archiveLocation", l: ArchiveLocationLocator{}, a: wf.Artifact{Name: "out"}, wantErr: flow.ErrNoRepository},
		{name: "Argo: an archiveLocation with no key (git) is refused, not crashed on", l: ArchiveLocationLocator{Location: &wf.ArtifactLocation{Git: &wf.GitArtifact{Repo: "r"}}},
			a: wf.Artifact{Name: "out"}, wantErr: artifacts.ErrNotSupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, rep, err := tt.l.Locate(tt.a, vars)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if up.S3 == nil || *up.S3 != tt.wantUpload {
				t.Errorf("upload to %+v, want %+v", up.S3, tt.wantUpload)
			}
			if rep.S3 == nil || *rep.S3 != *tt.wantReported {
				t.Errorf("reported %+v, want %+v", rep.S3, tt.wantReported)
			}
		})
	}
}

// TestArchiveLocationLocatorOtherStores: outputs to an artifactory or oss
// archiveLocation are located as Argo v3.3.8's argoexec locates them
// (saveArtifactFromFile, then Relocate for the upload).
func TestArchiveLocationLocatorOtherStores(t *testing.T) {
	auth := wf.ArtifactoryAuth{UsernameSecret: sel("art", "user"), PasswordSecret: sel("art", "pass")}
	rt := &wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "http://10.88.0.1:8081/generic/wf-1/wf-1-123", ArtifactoryAuth: auth}}
	oss := &wf.ArtifactLocation{OSS: &wf.OSSArtifact{OSSBucket: wf.OSSBucket{Endpoint: "http://oss:7070", Bucket: "b"}, Key: "wf-1/wf-1-123"}}
	gcs := &wf.ArtifactLocation{GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "g"}, Key: "wf-1/wf-1-123"}}
	tests := []struct {
		name                string
		archive             *wf.ArtifactLocation
		a                   wf.Artifact
		wantUpload, wantRep wf.ArtifactLocation
	}{
		{name: "artifactory: URL/NAME.tgz, reported by path alone", archive: rt, a: wf.Artifact{Name: "out", Path: "/tmp/out"},
			wantUpload: wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "http://10.88.0.1:8081/generic/wf-1/wf-1-123/out.tgz", ArtifactoryAuth: auth}},
			wantRep:    wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "/generic/wf-1/wf-1-123/out.tgz"}}},
		{name: "artifactory: archive none keeps the base name", archive: rt, a: wf.Artifact{Name: "out", Path: "/tmp/hello.txt", Archive: &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}},
			wantUpload: wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "http://10.88.0.1:8081/generic/wf-1/wf-1-123/hello.txt", ArtifactoryAuth: auth}},
			wantRep:    wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "/generic/wf-1/wf-1-123/hello.txt"}}},
		{name: "artifactory: an artifact's own URL is kept", archive: rt, a: wf.Artifact{Name: "out", Artifactory: &wf.ArtifactoryArtifact{URL: "http://h/x/y.tgz"}},
			wantUpload: wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "http://h/x/y.tgz"}},
			wantRep:    wf.ArtifactLocation{Artifactory: &wf.ArtifactoryArtifact{URL: "http://h/x/y.tgz"}}},
		{name: "oss: KEY/NAME.tgz, reported by key alone", archive: oss, a: wf.Artifact{Name: "out", Path: "/tmp/out"},
			wantUpload: wf.ArtifactLocation{OSS: &wf.OSSArtifact{OSSBucket: oss.OSS.OSSBucket, Key: "wf-1/wf-1-123/out.tgz"}},
			wantRep:    wf.ArtifactLocation{OSS: &wf.OSSArtifact{Key: "wf-1/wf-1-123/out.tgz"}}},
		{name: "oss: an artifact's own key is kept", archive: oss, a: wf.Artifact{Name: "out", OSS: &wf.OSSArtifact{Key: "own"}},
			wantUpload: wf.ArtifactLocation{OSS: &wf.OSSArtifact{Key: "own"}}, wantRep: wf.ArtifactLocation{OSS: &wf.OSSArtifact{Key: "own"}}},
		// No case in Locate names gcs: the kind's key is wf.ArtifactLocation's to know, and
		// whether a store can save there is the Store's (checked before main runs).
		{name: "gcs: KEY/NAME.tgz with no case of its own", archive: gcs, a: wf.Artifact{Name: "out", Path: "/tmp/out"},
			wantUpload: wf.ArtifactLocation{GCS: &wf.GCSArtifact{GCSBucket: gcs.GCS.GCSBucket, Key: "wf-1/wf-1-123/out.tgz"}},
			wantRep:    wf.ArtifactLocation{GCS: &wf.GCSArtifact{Key: "wf-1/wf-1-123/out.tgz"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, rep, err := ArchiveLocationLocator{Location: tt.archive}.Locate(tt.a, flow.KeyVars{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprintf("%+v %+v %+v", up.Artifactory, up.OSS, up.GCS), fmt.Sprintf("%+v %+v %+v", tt.wantUpload.Artifactory, tt.wantUpload.OSS, tt.wantUpload.GCS); got != want {
				t.Errorf("upload to %s, want %s", got, want)
			}
			if got, want := fmt.Sprintf("%+v %+v %+v", rep.Artifactory, rep.OSS, rep.GCS), fmt.Sprintf("%+v %+v %+v", tt.wantRep.Artifactory, tt.wantRep.OSS, tt.wantRep.GCS); got != want {
				t.Errorf("reported %s, want %s", got, want)
			}
			if up.S3 != nil || rep.S3 != nil {
				t.Errorf("an s3 location was set: %+v %+v", up.S3, rep.S3)
			}
		})
	}
}

func sel(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}
