package argo

import (
	"errors"
	"testing"

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
		{name: "Argo: a gcs archiveLocation is refused, not crashed on", l: ArchiveLocationLocator{Location: &wf.ArtifactLocation{GCS: &wf.GCSArtifact{Key: "k"}}},
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
