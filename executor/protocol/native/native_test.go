package native

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/protocol"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestRepositoryKeys: the one secret a pod of ours holds is the gcs
// repository's key; any other is refused saying so.
func TestRepositoryKeys(t *testing.T) {
	k := repositoryKeys{gcsKey: "{json}"}
	sel := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sa"}, Key: "key.json"}
	if v, err := k.Secret("gcs.serviceAccountKeySecret", sel); err != nil || v != "{json}" {
		t.Errorf("gcs key = %q, %v", v, err)
	}
	if _, err := k.Secret("artifactory.usernameSecret", sel); err == nil || !strings.Contains(err.Error(), "argoexec-step pods hold only the repository's key") {
		t.Errorf("another secret: %v", err)
	}
	if _, err := (repositoryKeys{}).Secret("gcs.serviceAccountKeySecret", sel); err == nil {
		t.Error("a gcs key the pod was not given: no error")
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestProtocol(t *testing.T) {
	repo := `{"s3":{"endpoint":"s3:7070","bucket":"b","keyFormat":"{{workflow.name}}/{{pod.name}}"}}`
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, parts protocol.FlowParts)
	}{
		{name: "defaults", env: map[string]string{}, check: func(t *testing.T, parts protocol.FlowParts) {
			if parts.Config.SidecarMode != wf.SidecarModeNative {
				t.Errorf("sidecar mode %q", parts.Config.SidecarMode)
			}
			_, _, err := parts.Config.Protocol.Artifacts.Locate(wf.Artifact{Name: "out"}, flow.KeyVars{})
			if !errors.Is(err, flow.ErrNoRepository) {
				t.Errorf("Locate without a repository: %v", err)
			}
		}},
		{name: "the repository locates outputs and limits the store to its bucket", env: map[string]string{wf.EnvArtifactRepository: repo, wf.EnvS3AccessKey: "a", wf.EnvS3SecretKey: "s"},
			check: func(t *testing.T, parts protocol.FlowParts) {
				up, _, err := parts.Config.Protocol.Artifacts.Locate(wf.Artifact{Name: "out"}, flow.KeyVars{WorkflowName: "wf", PodName: "pod"})
				if err != nil || up.S3 == nil || up.S3.Bucket != "b" || up.S3.Key != "wf/pod" {
					t.Errorf("Locate = %+v, %v", up.S3, err)
				}
				c := parts.Store.(flow.ArtifactChecker)
				if err := c.Check(wf.Artifact{Name: "in", S3: &wf.S3Artifact{Key: "k"}}, false); err != nil {
					t.Errorf("Check s3 input: %v", err)
				}
			}},
		{name: "a gcs repository locates outputs in its bucket, and takes only gcs artifacts of that bucket",
			env: map[string]string{wf.EnvArtifactRepository: `{"gcs":{"bucket":"g","serviceAccountKeySecret":{"name":"sa","key":"key.json"},"keyFormat":"{{workflow.name}}/{{pod.name}}"}}`, wf.EnvGCSServiceAccountKey: "{}"},
			check: func(t *testing.T, parts protocol.FlowParts) {
				up, _, err := parts.Config.Protocol.Artifacts.Locate(wf.Artifact{Name: "out"}, flow.KeyVars{WorkflowName: "wf", PodName: "pod"})
				if err != nil || up.GCS == nil || up.GCS.Bucket != "g" || up.GCS.Key != "wf/pod" || up.S3 != nil {
					t.Errorf("Locate = %+v %+v, %v", up.GCS, up.S3, err)
				}
				c := parts.Store.(flow.ArtifactChecker)
				if err := c.Check(wf.Artifact{Name: "in", GCS: &wf.GCSArtifact{Key: "k"}}, false); err != nil {
					t.Errorf("Check gcs input: %v", err)
				}
				if err := c.Check(wf.Artifact{Name: "in", S3: &wf.S3Artifact{Key: "k"}}, false); err == nil || !strings.Contains(err.Error(), "no S3 repository is configured") {
					t.Errorf("Check s3 input with a gcs repository: %v", err)
				}
				_, err = parts.Store.Save(t.Context(), t.TempDir(), wf.Artifact{Name: "out", GCS: &wf.GCSArtifact{GCSBucket: wf.GCSBucket{Bucket: "other"}, Key: "k"}})
				if err == nil || !strings.Contains(err.Error(), "gs://other/k is not in the artifact repository's bucket") {
					t.Errorf("Save to another bucket: %v", err)
				}
			}},
		{name: "a bad sidecar mode", env: map[string]string{wf.EnvSidecarMode: "sometimes"}, wantErr: `ARGO_SIDECAR_MODE="sometimes" is not a sidecar mode`},
		{name: "a bad repository", env: map[string]string{wf.EnvArtifactRepository: "{"}, wantErr: "ARGO_ARTIFACT_REPOSITORY is not an artifact repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Protocol{}
			if err := p.Complete("wait", env(tt.env)); err != nil {
				t.Fatal(err)
			}
			err := p.Validate("wait")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate: %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			parts, err := p.Flow(protocol.Request{Command: "wait", Template: &wf.Template{Name: "t"}, Log: logrus.NewEntry(logrus.New())})
			if err != nil {
				t.Fatal(err)
			}
			if parts.Reporter != nil {
				t.Error("a reporter without a REST config")
			}
			tt.check(t, parts)
		})
	}
}

// TestStoreFileSecretStores: under our pod builder, git, artifactory and
// oss artifacts are configured and read the secret files the pod builder
// mounts; main's log is archived when the template's archiveLocation says
// so (the pod builder writes the effective value there).
func TestStoreFileSecretStores(t *testing.T) {
	root := t.TempDir()
	for name, v := range map[string]string{"rt/user": "alice", "rt/pass": "s3cret"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var gotAuth, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		gotAuth, gotPath = u+":"+p, r.URL.Path
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	repo := `{"archiveLogs":true,"artifactory":{"repoURL":"` + srv.URL + `/generic","usernameSecret":{"name":"rt","key":"user"},"passwordSecret":{"name":"rt","key":"pass"}}}`
	p := &Protocol{SecretsRoot: root}
	if err := p.Complete("wait", env(map[string]string{wf.EnvArtifactRepository: repo})); err != nil {
		t.Fatal(err)
	}
	yes := true
	tmpl := &wf.Template{Name: "t", ArchiveLocation: &wf.ArtifactLocation{ArchiveLogs: &yes}}
	parts, err := p.Flow(protocol.Request{Command: "wait", Template: tmpl, Log: logrus.NewEntry(logrus.New())})
	if err != nil {
		t.Fatal(err)
	}
	if !parts.Config.Protocol.ArchiveLogs {
		t.Error("archiveLogs in the template's archiveLocation: the flow does not archive main's log")
	}
	c := parts.Store.(flow.ArtifactChecker)
	for _, tt := range []struct {
		name   string
		a      wf.Artifact
		output bool
	}{
		{"git input", wf.Artifact{Name: "src", Git: &wf.GitArtifact{Repo: "http://git/r.git"}}, false},
		{"artifactory input", wf.Artifact{Name: "in", Artifactory: &wf.ArtifactoryArtifact{URL: srv.URL + "/generic/x"}}, false},
		{"artifactory output", wf.Artifact{Name: "out", Artifactory: &wf.ArtifactoryArtifact{URL: srv.URL + "/generic/x"}}, true},
		{"oss input", wf.Artifact{Name: "in", OSS: &wf.OSSArtifact{OSSBucket: wf.OSSBucket{Endpoint: "oss:1", Bucket: "b"}, Key: "k"}}, false},
		{"oss output", wf.Artifact{Name: "out", OSS: &wf.OSSArtifact{OSSBucket: wf.OSSBucket{Endpoint: "oss:1", Bucket: "b"}, Key: "k"}}, true},
	} {
		if err := c.Check(tt.a, tt.output); err != nil {
			t.Errorf("%s: Check: %v", tt.name, err)
		}
	}
	if err := c.Check(wf.Artifact{Name: "in", S3: &wf.S3Artifact{Key: "k"}}, false); err == nil || !strings.Contains(err.Error(), "no S3 repository is configured") {
		t.Errorf("s3 input with an artifactory repository: %v, want no S3 repository", err)
	}
	// An output without a location goes to the repository, with its secrets read from the files.
	up, _, err := parts.Config.Protocol.Artifacts.Locate(wf.Artifact{Name: "out"}, flow.KeyVars{WorkflowName: "wf", PodName: "pod"})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parts.Store.Save(t.Context(), file, up); err != nil {
		t.Fatalf("Save to the artifactory repository: %v", err)
	}
	if gotAuth != "alice:s3cret" || gotPath != "/generic/wf/pod/out.tgz" {
		t.Errorf("PUT %s as %q, want /generic/wf/pod/out.tgz as alice:s3cret", gotPath, gotAuth)
	}
}
