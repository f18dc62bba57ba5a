//go:build e2e

// Smoke tests: each real component of the testbed does the one thing the e2e tier relies on.
package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// A plain busybox:local pod, scheduled by the scheduler (no nodeName), runs to Succeeded on
// the real kubelet and its log is readable through the API server.
func TestSmokePodSucceeds(t *testing.T) {
	f := framework.New(t)
	ctx := f.Context()
	pod := f.SimplePod("smoke", "echo hello-from-e2e; test -x /bin/tar && test -x /bin/kill")
	f.CreatePod(ctx, pod)
	got, err := f.WaitForPodPhase(ctx, pod.Name, corev1.PodSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != f.Env.NodeName {
		t.Errorf("pod ran on node %q, want %q", got.Spec.NodeName, f.Env.NodeName)
	}
	if got.Status.HostIP != f.Env.KubeletHost {
		t.Errorf("status.hostIP = %q, want the node IP %q", got.Status.HostIP, f.Env.KubeletHost)
	}
	logs, err := f.PodLogs(ctx, pod.Name, "main")
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	if !strings.Contains(logs, "hello-from-e2e") {
		t.Errorf("log = %q, want it to contain hello-from-e2e", logs)
	}
}

// A failing container makes the pod Failed with its exit code: the helpers report failure.
func TestSmokePodFails(t *testing.T) {
	f := framework.New(t)
	ctx := f.Context()
	pod := f.SimplePod("fails", "exit 3")
	f.CreatePod(ctx, pod)
	got, err := f.WaitForPodPhase(ctx, pod.Name, corev1.PodFailed)
	if err != nil {
		t.Fatal(err)
	}
	cs := got.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 3 {
		t.Errorf("want main terminated with exit 3, got %s", framework.DescribeStatuses(got))
	}
}

// The kubelet's HTTPS API verifies against the cluster CA, refuses a request without
// credentials (401), and answers an authenticated one (webhook authn/authz).
func TestSmokeKubeletTLS(t *testing.T) {
	f := framework.New(t)
	ctx := f.Context()
	anon, err := f.KubeletClient(false)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.Env.KubeletURL()+"/pods", nil)
	resp, err := anon.Do(req)
	if err != nil {
		var uae x509.UnknownAuthorityError
		var hne x509.HostnameError
		if errors.As(err, &uae) || errors.As(err, &hne) {
			t.Fatalf("kubelet TLS does not verify against the cluster CA %s: %v", f.Env.CAFile, err)
		}
		t.Fatalf("GET %s/pods: %v", f.Env.KubeletURL(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no credentials: HTTP %d, want 401", resp.StatusCode)
	}

	admin, err := f.KubeletClient(true)
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, f.Env.KubeletURL()+"/healthz", nil)
	resp, err = admin.Do(req)
	if err != nil {
		t.Fatalf("GET /healthz with the admin client cert: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		t.Errorf("admin cert: HTTP %d %q, want 200 ok", resp.StatusCode, body)
	}
}

// A container started on the real dockerd through the Engine API, with the labels
// cri-dockerd would set, is found by a label filter and reports its exit code and logs.
func TestSmokeDockerEngine(t *testing.T) {
	env := framework.LoadEnv()
	d := framework.NewDocker(env.DockerSock)
	ctx, cancel := context.WithTimeout(context.Background(), framework.DefaultTimeout)
	defer cancel()
	if err := d.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	ns, pod, uid := "e2e-docker", "smoke-"+strings.ReplaceAll(t.Name(), "/", "-"), "uid-"+randHex(t)
	id, err := d.CreateContainer(ctx, "", framework.ContainerSpec{
		Image:  env.BusyboxImage,
		Cmd:    []string{"sh", "-c", "echo docker-says-hi; exit 7"},
		Labels: framework.CRIDockerdLabels(ns, pod, uid, "main"),
	})
	if err != nil {
		t.Fatalf("create (is %s loaded into dockerd? hack/images.sh): %v", env.BusyboxImage, err)
	}
	t.Cleanup(func() {
		if err := d.RemoveContainer(context.Background(), id); err != nil {
			t.Logf("remove %s: %v", id, err)
		}
	})
	if err := d.StartContainer(ctx, id); err != nil {
		t.Fatalf("start: %v", err)
	}
	code, err := d.WaitContainer(ctx, id)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
	list, err := d.ListContainers(ctx, "io.kubernetes.pod.name="+pod, "io.kubernetes.pod.uid="+uid)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list) != 1 || list[0].Id != id {
		t.Fatalf("GET /containers/json by label: got %+v, want exactly %s", list, id)
	}
	if got := list[0].Labels["io.kubernetes.container.name"]; got != "main" {
		t.Errorf("container name label = %q", got)
	}
	logs, err := d.ContainerLogs(ctx, id, 0)
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	if !strings.Contains(logs, "docker-says-hi") {
		t.Errorf("logs = %q", logs)
	}
	none, err := d.ListContainers(ctx, "io.kubernetes.pod.name=no-such-pod-"+uid)
	if err != nil || len(none) != 0 {
		t.Errorf("filter for a pod that does not exist: %v %+v", err, none)
	}
}

// The S3 server (versitygw) takes the test keys: make a bucket, put and get an object.
func TestSmokeS3(t *testing.T) {
	env := framework.LoadEnv()
	if env.S3AccessKey == "" {
		t.Fatalf("no S3 keys: set ARGOEXEC_E2E_S3_ACCESS_KEY/SECRET_KEY or run hack/cluster.sh up (writes %s/s3.env)", env.State)
	}
	u, err := url.Parse(env.S3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(env.S3AccessKey, env.S3SecretKey, ""),
		Secure: u.Scheme == "https",
		Region: env.S3Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), framework.DefaultTimeout)
	defer cancel()
	bucket := "e2e-smoke-" + randHex(t)
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: env.S3Region}); err != nil {
		t.Fatalf("make bucket at %s: %v", env.S3Endpoint, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			_ = c.RemoveObject(ctx, bucket, o.Key, minio.RemoveObjectOptions{})
		}
		_ = c.RemoveBucket(ctx, bucket)
	})
	data := []byte("artifact bytes")
	if _, err := c.PutObject(ctx, bucket, "dir/obj.txt", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("put: %v", err)
	}
	obj, err := c.GetObject(ctx, bucket, "dir/obj.txt", minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %q %v, want %q", got, err, data)
	}
}
