package native

import (
	"errors"
	"testing"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func TestKeyFormatLocator(t *testing.T) {
	repo := &wf.S3ArtifactRepository{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}}
	vars := flow.KeyVars{WorkflowName: "wf", PodName: "pod"}
	tests := []struct {
		name         string
		l            flow.ArtifactLocator
		a            wf.Artifact
		wantUpload   wf.S3Artifact
		wantReported *wf.S3Artifact
		wantErr      error
	}{
		{name: "ours: the ConfigMap's keyFormat, the whole location reported", l: KeyFormatLocator{Repository: repo}, a: wf.Artifact{Name: "out"},
			wantUpload: wf.S3Artifact{S3Bucket: repo.S3Bucket, Key: "wf/pod/out.tgz"}, wantReported: &wf.S3Artifact{S3Bucket: repo.S3Bucket, Key: "wf/pod/out.tgz"}},
		{name: "ours: no repository", l: KeyFormatLocator{}, a: wf.Artifact{Name: "out"}, wantErr: flow.ErrNoRepository},
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
