//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/executor/emissary"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// secretKey is the key key of the Secret name, for an artifact's secret field.
func secretKey(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

// createSecret makes the Secret name in the test's namespace.
func (e *wfEnv) createSecret(t *testing.T, name string, data map[string]string) {
	t.Helper()
	if _, err := e.f.Client.CoreV1().Secrets(e.f.Namespace).Create(e.f.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret %s: %v", name, err)
	}
}

// TestStepArchiveLogs runs, under our own pod builder, a step whose repository says
// archiveLogs: wait must save main's log to the testbed's S3 as main.log beside the step's
// artifacts (WORKFLOW/POD/main.log), report it as the output artifact main-logs, and the
// object must hold main's log byte for byte, on every backend that runs pods here.
func TestStepArchiveLogs(t *testing.T) {
	for _, tc := range []struct {
		name, backend string
		template      bool // archiveLocation.archiveLogs in the template, not the repository's
	}{
		{name: wf.ExecutorK8sAPI, backend: wf.ExecutorK8sAPI},
		{name: wf.ExecutorKubelet, backend: wf.ExecutorKubelet},
		{name: emissary.ExecutorEmissary, backend: emissary.ExecutorEmissary},
		{name: "template-" + wf.ExecutorK8sAPI, backend: wf.ExecutorK8sAPI, template: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newWfEnv(t, tc.backend)
			yes := true
			// stdout, then (after a pause, so no reader can reorder them) stderr: the log is combined.
			tmpl := e.template("logs", "for i in 1 2 3; do echo \"line $i: héllo\"; done; sleep 1; echo 'to stderr' >&2")
			if tc.template {
				tmpl.ArchiveLocation = &wf.ArtifactLocation{ArchiveLogs: &yes}
			} else {
				e.cfg.ArtifactRepository.ArchiveLogs = &yes
			}
			r := e.run(t, "logs", tmpl, nil, false)
			if r.pod.Status.Phase != corev1.PodSucceeded || r.outputs == nil {
				t.Fatalf("phase %s, outputs %+v; wait log:\n%s", r.pod.Status.Phase, r.outputs, r.waitLog)
			}
			var logs *wf.Artifact
			for i, a := range r.outputs.Artifacts {
				if a.Name == wf.MainLogsArtifactName {
					logs = &r.outputs.Artifacts[i]
				}
			}
			const wantKey = "wf/logs/main.log"
			if logs == nil || logs.S3 == nil || logs.S3.Key != wantKey || logs.S3.Bucket != e.bucket {
				t.Fatalf("outputs %+v: want artifact %s at s3://%s/%s", r.outputs.Artifacts, wf.MainLogsArtifactName, e.bucket, wantKey)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			obj, err := e.s3.GetObject(ctx, e.bucket, wantKey, minio.GetObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(obj)
			if err != nil {
				t.Fatalf("read s3://%s/%s: %v", e.bucket, wantKey, err)
			}
			const want = "line 1: héllo\nline 2: héllo\nline 3: héllo\nto stderr\n"
			if string(got) != want {
				t.Errorf("s3://%s/%s holds %q, want main's log %q", e.bucket, wantKey, got, want)
			}
			if log := containerLog(ctx, e, "logs", wf.MainContainerName); log != string(got) {
				t.Errorf("the archived log %q is not main's log as the API server has it, %q", got, log)
			}
		})
	}
}

// TestStepGitInput runs, under our own pod builder, a step with a git input cloned from the
// repository serveGitRepo serves on the node's IP, at depth 1, naming username and password
// secrets (the pod builder mounts them into init, which the cloner reads; the server asks for
// none): main must see the repository's files at the latest commit.
func TestStepGitInput(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (hack/deps.sh)")
	}
	e := newWfEnv(t, wf.ExecutorK8sAPI)
	repo := serveGitRepo(t, e.f.Env.KubeletHost, buildGitRepo(t))
	e.createSecret(t, "git-credentials", map[string]string{"username": "reader", "password": "not-checked"})
	depth := uint64(1)
	tmpl := e.template("git", "cat /src/hello /src/sub/nested; test -d /src/.git && echo has-git")
	tmpl.Inputs.Artifacts = []wf.Artifact{{Name: "src", Path: "/src", Git: &wf.GitArtifact{Repo: repo, Depth: &depth,
		UsernameSecret: secretKey("git-credentials", "username"), PasswordSecret: secretKey("git-credentials", "password")}}}
	r := e.run(t, "git", tmpl, nil, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s; init log:\n%s", r.pod.Status.Phase, containerLog(ctx, e, "git", wf.InitContainerName))
	}
	if log, want := containerLog(ctx, e, "git", wf.MainContainerName), "hello from git\nnested\nhas-git\n"; log != want {
		t.Errorf("main printed %q, want %q", log, want)
	}
}

// TestStepArtifactory runs two steps of our own pod builder with an artifactory repository, a
// WebDAV nginx on the node's IP that asks for basic authentication (startWebDAV): produce's
// output goes to the repository's URL at the default key layout, reported with the secrets'
// names; the object on the server is the tarball of produce's file; consume loads it back by
// the reported location as an input.
func TestStepArtifactory(t *testing.T) {
	e := newWfEnv(t, wf.ExecutorK8sAPI)
	base := startWebDAV(t, e.f.Env.KubeletHost)
	e.createSecret(t, "webdav", map[string]string{"user": webdavUser, "password": webdavPassword})
	repoURL := base + "/generic/" + e.f.Namespace
	e.cfg.ArtifactRepository = wf.ArtifactRepository{Artifactory: &wf.ArtifactoryArtifactRepository{RepoURL: repoURL,
		ArtifactoryAuth: wf.ArtifactoryAuth{UsernameSecret: secretKey("webdav", "user"), PasswordSecret: secretKey("webdav", "password")}}}

	produce := e.template("produce", "echo hello artifactory > /work/out.txt")
	produce.Outputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/work/out.txt"}}
	r := e.run(t, "produce", produce, nil, false)
	if r.pod.Status.Phase != corev1.PodSucceeded || r.outputs == nil || len(r.outputs.Artifacts) != 1 {
		t.Fatalf("produce: phase %s, outputs %+v; wait log:\n%s", r.pod.Status.Phase, r.outputs, r.waitLog)
	}
	got := r.outputs.Artifacts[0].Artifactory
	if want := repoURL + "/wf/produce/out.tgz"; got == nil || got.URL != want || got.UsernameSecret == nil || got.UsernameSecret.Name != "webdav" {
		t.Fatalf("produce reported %+v, want %s with the webdav secret", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, got.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(webdavUser, webdavPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		t.Fatalf("GET %s: %s, %d bytes, want the artifact's tar.gz", got.URL, resp.Status, len(body))
	}

	consume := e.template("consume", "cat /in/out.txt")
	consume.Inputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/in/out.txt", Artifactory: got}}
	r = e.run(t, "consume", consume, nil, false)
	if r.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("consume: phase %s; init log:\n%s", r.pod.Status.Phase, containerLog(ctx, e, "consume", wf.InitContainerName))
	}
	if log := containerLog(ctx, e, "consume", wf.MainContainerName); log != "hello artifactory\n" {
		t.Errorf("consume printed %q, want %q", log, "hello artifactory\n")
	}

	// Without the password the server refuses, and init says which artifact and store failed.
	e.createSecret(t, "webdav-wrong", map[string]string{"user": webdavUser, "password": "wrong"})
	bad := e.template("bad", "cat /in/out.txt")
	badLoc := *got
	badLoc.PasswordSecret = secretKey("webdav-wrong", "password")
	bad.Inputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/in/out.txt", Artifactory: &badLoc}}
	r = e.run(t, "bad", bad, nil, false)
	if r.pod.Status.Phase != corev1.PodFailed {
		t.Fatalf("bad credentials: phase %s, want Failed", r.pod.Status.Phase)
	}
	var msg string
	for _, s := range r.pod.Status.InitContainerStatuses {
		if s.Name == wf.InitContainerName && s.State.Terminated != nil {
			msg = s.State.Terminated.Message
		}
	}
	if !strings.Contains(msg, "artifactory") || !strings.Contains(msg, `"out"`) {
		t.Errorf("init's termination message %q does not name the store and the artifact", msg)
	}
}

// TestStepOSS runs two steps of our own pod builder with an oss repository, reached through
// OSS's S3-compatible API: the testbed's S3 server, with the bucket's keys in a Secret that
// the pod builder mounts into wait (produce) and init (consume) for the repository's
// accessKeySecret and secretKeySecret. produce's output goes to the repository's keyFormat and
// is reported with the bucket and the secrets' names; consume loads it back by that location.
// Not covered: an Alibaba Cloud endpoint (OSS's own API and signature), lifecycleRule.
func TestStepOSS(t *testing.T) {
	e := newWfEnv(t, wf.ExecutorK8sAPI)
	s3 := e.cfg.ArtifactRepository.S3
	e.cfg.ArtifactRepository = wf.ArtifactRepository{OSS: &wf.OSSArtifactRepository{OSSBucket: wf.OSSBucket{
		Endpoint: "http://" + s3.Endpoint, Bucket: e.bucket, AccessKeySecret: s3.AccessKeySecret, SecretKeySecret: s3.SecretKeySecret},
		KeyFormat: "oss/{{pod.name}}/{{artifact.name}}.tgz"}}

	produce := e.template("produce", "echo hello oss > /work/out.txt")
	produce.Outputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/work/out.txt"}}
	r := e.run(t, "produce", produce, nil, false)
	if r.pod.Status.Phase != corev1.PodSucceeded || r.outputs == nil || len(r.outputs.Artifacts) != 1 {
		t.Fatalf("produce: phase %s, outputs %+v; wait log:\n%s", r.pod.Status.Phase, r.outputs, r.waitLog)
	}
	got := r.outputs.Artifacts[0].OSS
	if got == nil || got.Key != "oss/produce/out.tgz" || got.Bucket != e.bucket || got.AccessKeySecret == nil {
		t.Fatalf("produce reported %+v, want oss://%s/oss/produce/out.tgz with the key secrets", got, e.bucket)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.s3.StatObject(ctx, e.bucket, got.Key, minio.StatObjectOptions{}); err != nil {
		t.Fatalf("the object produce reported is not in the bucket: %v", err)
	}
	consume := e.template("consume", "cat /in/out.txt")
	consume.Inputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/in/out.txt", OSS: got}}
	r = e.run(t, "consume", consume, nil, false)
	if r.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("consume: phase %s; init log:\n%s", r.pod.Status.Phase, containerLog(ctx, e, "consume", wf.InitContainerName))
	}
	if log := containerLog(ctx, e, "consume", wf.MainContainerName); log != "hello oss\n" {
		t.Errorf("consume printed %q, want %q", log, "hello oss\n")
	}
}
