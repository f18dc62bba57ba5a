//go:build e2e

package faults

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// dockerRun is a step on the docker backend, run the way a Docker-runtime node (cri-dockerd)
// would: main and the argoexec wait container are containers on the real dockerd, labelled as
// containers of one pod. The pod object exists in the API server (bound to
// framework.DockerNodeName, a Node no kubelet runs) only as the target of wait's outputs
// annotation. No kubelet reports the containers: the pod's phase is what a kubelet would make
// of their exits.
type dockerRun struct {
	d   *framework.Docker
	ids map[string]string
}

// newDockerStep creates the pod object, main and wait (the test's host dirs are main's /sync
// and /work, and wait's mirror of /work) and starts them, main first.
func newDockerStep(ctx context.Context, t *testing.T, s *step) {
	t.Helper()
	e := s.e
	if err := framework.RegisterDockerNode(ctx, e.F.Client); err != nil {
		t.Fatal(err)
	}
	pod, err := e.F.Client.CoreV1().Pods(e.F.Namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name},
		Spec: corev1.PodSpec{NodeName: framework.DockerNodeName, Tolerations: framework.DockerNodeTolerations(),
			Containers: []corev1.Container{{Name: wf.MainContainerName, Image: e.F.Env.BusyboxImage}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.pod = pod
	work, etc := filepath.Join(s.dir, "work"), filepath.Join(s.dir, "etc")
	for _, d := range []string{work, etc} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	tj, err := json.Marshal(s.template)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "template"), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "kubeconfig"), dockerKubeconfig(ctx, t, e), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &dockerRun{d: framework.NewDocker(e.F.Env.DockerSock), ids: map[string]string{}}
	s.docker = r
	t.Cleanup(func() {
		for _, id := range r.ids {
			_ = r.d.RemoveContainer(context.Background(), id)
		}
	})
	labels := func(c string) map[string]string {
		return framework.CRIDockerdLabels(pod.Namespace, pod.Name, string(pod.UID), c)
	}
	env := e.F.Env
	repo, err := json.Marshal(e.Config.ArtifactRepository)
	if err != nil {
		t.Fatal(err)
	}
	specs := []struct {
		name string
		body map[string]any
	}{
		{wf.MainContainerName, map[string]any{
			"Image": env.BusyboxImage, "Cmd": []string{"sh", "-c", mainScript}, "Labels": labels(wf.MainContainerName),
			"HostConfig": map[string]any{"NetworkMode": "none", "Binds": []string{work + ":/work", s.dir + ":/sync"}},
		}},
		{wf.WaitContainerName, map[string]any{
			"Image": env.ExecutorImage, "User": "0",
			"Cmd":    []string{"wait", "--loglevel=debug", "--kubeconfig=/etc/argo/kubeconfig", "--template=/etc/argo/template"},
			"Labels": labels(wf.WaitContainerName),
			"Env": []string{
				wf.EnvPodName + "=" + pod.Name, wf.EnvPodNamespace + "=" + pod.Namespace, wf.EnvPodUID + "=" + string(pod.UID),
				wf.EnvContainerRuntimeExecutor + "=docker", wf.EnvDockerSockPath + "=/var/run/docker.sock",
				wf.EnvSidecarMode + "=" + wf.SidecarModeNative, wf.EnvWorkflowName + "=wf",
				wf.EnvArtifactRepository + "=" + string(repo),
				wf.EnvS3AccessKey + "=" + env.S3AccessKey, wf.EnvS3SecretKey + "=" + env.S3SecretKey,
			},
			"HostConfig": map[string]any{"NetworkMode": "host", "Tmpfs": map[string]string{"/tmp": "mode=1777"}, "Binds": []string{
				env.DockerSock + ":/var/run/docker.sock:ro", etc + ":/etc/argo:ro", work + ":" + wf.MainCtrFSPath + "/work:ro",
			}},
		}},
	}
	for _, c := range specs {
		var out struct{ Id string }
		q := map[string][]string{"name": {pod.Namespace + "_" + pod.Name + "_" + c.name}}
		if err := r.d.Do(ctx, "POST", "/containers/create", q, c.body, &out); err != nil {
			t.Fatalf("create container %s: %v", c.name, err)
		}
		r.ids[c.name] = out.Id
	}
	for _, c := range specs {
		if err := r.d.StartContainer(ctx, r.ids[c.name]); err != nil {
			t.Fatalf("start %s: %v", c.name, err)
		}
	}
}

// dockerKubeconfig is a kubeconfig for the overlay's argoexec service account (a TokenRequest
// token), so wait patches its pod with exactly the RBAC the docker overlay grants.
func dockerKubeconfig(ctx context.Context, t *testing.T, e *framework.StepEnv) []byte {
	t.Helper()
	exp := int64(3600)
	tok, err := e.F.Client.CoreV1().ServiceAccounts(e.F.Namespace).CreateToken(ctx, "argoexec",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for argoexec: %v", err)
	}
	ca, err := os.ReadFile(e.F.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, certificate-authority-data: %q}
users:
- name: u
  user: {token: %q}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: %q}
current-context: x
`, e.F.Config.Host, base64.StdEncoding.EncodeToString(ca), tok.Status.Token, e.F.Namespace)
}

// log is wait's log from dockerd.
func (r *dockerRun) log() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, _ := r.d.ContainerLogs(ctx, r.ids[wf.WaitContainerName], 0)
	return l
}

// finish waits for wait to exit and returns the pod object with the status a kubelet would
// report: each container terminated with its exit code, wait's message its log's last line,
// and the phase Succeeded when both exited 0, else Failed.
func (r *dockerRun) finish(ctx context.Context, s *step) (*corev1.Pod, error) {
	waitCode, err := r.d.WaitContainer(ctx, r.ids[wf.WaitContainerName])
	if err != nil {
		return nil, fmt.Errorf("docker wait for %s's wait container: %w", s.name, err)
	}
	mainCode, err := r.d.WaitContainer(ctx, r.ids[wf.MainContainerName])
	if err != nil {
		return nil, fmt.Errorf("docker wait for %s's main container: %w", s.name, err)
	}
	var p *corev1.Pod
	err = poll(ctx, "the API server to give pod "+s.name, func() bool {
		p, err = s.e.F.Client.CoreV1().Pods(s.e.F.Namespace).Get(ctx, s.name, metav1.GetOptions{})
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	p.Status.Phase = corev1.PodSucceeded
	if waitCode != 0 || mainCode != 0 {
		p.Status.Phase = corev1.PodFailed
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: wf.MainContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(mainCode)}}},
		{Name: wf.WaitContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(waitCode), Message: r.log()}}},
	}
	return p, nil
}
