package argo

import (
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/protocol"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestFlowArchiveLogs: wait archives main's log exactly when Argo v3.3.8's
// would (Template.SaveLogsAsArtifact): archiveLogs on the archive location,
// which Argo's controller sets from its repository or the template.
func TestFlowArchiveLogs(t *testing.T) {
	yes, no := true, false
	s3 := &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}, Key: "wf/pod"}
	container := &corev1.Container{Image: "alpine"}
	tests := []struct {
		name string
		tmpl wf.Template
		want bool
	}{
		{name: "archiveLogs true", tmpl: wf.Template{Container: container, ArchiveLocation: &wf.ArtifactLocation{ArchiveLogs: &yes, S3: s3}}, want: true},
		{name: "archiveLogs false", tmpl: wf.Template{Container: container, ArchiveLocation: &wf.ArtifactLocation{ArchiveLogs: &no, S3: s3}}},
		{name: "unset", tmpl: wf.Template{Container: container, ArchiveLocation: &wf.ArtifactLocation{S3: s3}}},
		{name: "no archive location", tmpl: wf.Template{Container: container}},
		{name: "a container set without main", tmpl: wf.Template{ArchiveLocation: &wf.ArtifactLocation{ArchiveLogs: &yes, S3: s3},
			ContainerSet: &wf.ContainerSetTemplate{Containers: []wf.ContainerNode{{Container: corev1.Container{Name: "a"}}}}}},
		{name: "a container set with main", tmpl: wf.Template{ArchiveLocation: &wf.ArtifactLocation{ArchiveLogs: &yes, S3: s3},
			ContainerSet: &wf.ContainerSetTemplate{Containers: []wf.ContainerNode{{Container: corev1.Container{Name: "main"}}}}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Protocol{ScratchRoot: t.TempDir()}
			parts, err := p.Flow(protocol.Request{Command: "wait", Template: &tt.tmpl, Log: logrus.NewEntry(logrus.New())})
			if err != nil {
				t.Fatal(err)
			}
			if got := parts.Config.Protocol.ArchiveLogs; got != tt.want {
				t.Errorf("ArchiveLogs = %v, want %v", got, tt.want)
			}
		})
	}
}
