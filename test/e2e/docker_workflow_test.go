//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// dockerStep runs one step the way a Docker-runtime node (cri-dockerd) would:
// main, sidecars and the argoexec wait container are containers on the real
// dockerd, labelled as containers of one pod. The pod object exists in the
// API server (bound to framework.DockerNodeName, a Node no kubelet runs) only as the target of wait's outputs annotation, as on a real node.
type dockerStep struct {
	e      *wfEnv
	d      *framework.Docker
	pod    *corev1.Pod
	dir    string // host dir: main's /work volume, mirrored into wait
	ids    map[string]string
	labels func(container string) map[string]string
}

func newDockerStep(t *testing.T, e *wfEnv, name string, tmpl *wf.Template) *dockerStep {
	t.Helper()
	ctx := e.f.Context()
	tj, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.RegisterDockerNode(ctx, e.f.Client); err != nil {
		t.Fatal(err)
	}
	pod, err := e.f.Client.CoreV1().Pods(e.f.Namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:    framework.DockerNodeName,
			Tolerations: framework.DockerNodeTolerations(),
			Containers:  []corev1.Container{{Name: "main", Image: e.f.Env.BusyboxImage}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, sub := range []string{"work", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "work"), 0o777)
	if err := os.WriteFile(filepath.Join(dir, "etc", "template"), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, e, filepath.Join(dir, "etc", "kubeconfig"))
	s := &dockerStep{e: e, d: framework.NewDocker(e.f.Env.DockerSock), pod: pod, dir: dir, ids: map[string]string{}}
	s.labels = func(c string) map[string]string {
		return framework.CRIDockerdLabels(pod.Namespace, pod.Name, string(pod.UID), c)
	}
	t.Cleanup(func() {
		for _, id := range s.ids {
			_ = s.d.RemoveContainer(context.Background(), id)
		}
	})
	return s
}

// writeKubeconfig writes a kubeconfig for the overlay's argoexec service
// account (a TokenRequest token), so wait patches its pod with exactly the
// RBAC the docker overlay grants.
func writeKubeconfig(t *testing.T, e *wfEnv, path string) {
	t.Helper()
	exp := int64(3600)
	tok, err := e.f.Client.CoreV1().ServiceAccounts(e.f.Namespace).CreateToken(e.f.Context(), "argoexec",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for argoexec: %v", err)
	}
	ca, err := os.ReadFile(e.f.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	host := e.f.Config.Host
	kc := fmt.Sprintf(`apiVersion: v1
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
`, host, encodeB64(ca), tok.Status.Token, e.f.Namespace)
	if err := os.WriteFile(path, []byte(kc), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *dockerStep) create(t *testing.T, name string, body map[string]any) {
	t.Helper()
	var out struct{ Id string }
	q := url.Values{"name": {s.pod.Namespace + "_" + s.pod.Name + "_" + name}}
	if err := s.d.Do(s.e.f.Context(), "POST", "/containers/create", q, body, &out); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	s.ids[name] = out.Id
}

func (s *dockerStep) busybox(t *testing.T, name, script string) {
	s.create(t, name, map[string]any{
		"Image": s.e.f.Env.BusyboxImage, "Cmd": []string{"sh", "-c", script}, "Labels": s.labels(name),
		"HostConfig": map[string]any{"NetworkMode": "none", "Binds": []string{filepath.Join(s.dir, "work") + ":/work"}},
	})
}

// wait creates the argoexec wait container with what the pod builder would
// give it on a Docker node.
func (s *dockerStep) wait(t *testing.T, sidecarMode string) {
	env := s.e.f.Env

	repo, _ := json.Marshal(s.e.cfg.ArtifactRepository)
	s.create(t, "wait", map[string]any{
		"Image": env.ExecutorImage, "User": "0",
		"Cmd":    []string{"wait", "--loglevel=debug", "--kubeconfig=/etc/argo/kubeconfig", "--template=/etc/argo/template"},
		"Labels": s.labels("wait"),
		"Env": []string{
			wf.EnvPodName + "=" + s.pod.Name, wf.EnvPodNamespace + "=" + s.pod.Namespace, wf.EnvPodUID + "=" + string(s.pod.UID),
			wf.EnvContainerRuntimeExecutor + "=docker", wf.EnvDockerSockPath + "=/var/run/docker.sock",
			wf.EnvSidecarMode + "=" + sidecarMode, wf.EnvWorkflowName + "=wf",
			wf.EnvArtifactRepository + "=" + string(repo),
			wf.EnvS3AccessKey + "=" + env.S3AccessKey, wf.EnvS3SecretKey + "=" + env.S3SecretKey,
		},
		// /tmp: the pod builder gives wait a private emptyDir there.
		"HostConfig": map[string]any{"NetworkMode": "host", "Tmpfs": map[string]string{"/tmp": "mode=1777"}, "Binds": []string{
			env.DockerSock + ":/var/run/docker.sock:ro",
			filepath.Join(s.dir, "etc") + ":/etc/argo:ro",
			filepath.Join(s.dir, "work") + ":" + wf.MainCtrFSPath + "/work:ro",
		}},
	})
}

// start starts every container (wait last, as its own pod would not order
// them either) and returns when wait has exited, with its exit code, its log
// and the outputs it reported.
func (s *dockerStep) start(t *testing.T, order ...string) (int, string, *wf.NodeOutputs) {
	t.Helper()
	ctx := s.e.f.Context()
	for _, n := range order {
		if err := s.d.StartContainer(ctx, s.ids[n]); err != nil {
			t.Fatalf("start %s: %v", n, err)
		}
	}
	code, err := s.d.WaitContainer(ctx, s.ids["wait"])
	if err != nil {
		t.Fatalf("wait for the wait container: %v", err)
	}
	log, _ := s.d.ContainerLogs(ctx, s.ids["wait"], 0)
	t.Logf("wait exited %d; log:\n%s", code, log)
	p, err := s.e.f.Client.CoreV1().Pods(s.pod.Namespace).Get(ctx, s.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out *wf.NodeOutputs
	if a := p.Annotations[wf.AnnotationOutputs]; a != "" {
		out = &wf.NodeOutputs{}
		if err := json.Unmarshal([]byte(a), out); err != nil {
			t.Fatalf("outputs annotation: %v", err)
		}
	}
	return code, log, out
}

// TestDockerWorkflow runs argoexec wait with the docker backend on the real
// dockerd: outputs from a volume and from the image's base layer of a stopped
// container (only this backend can), an artifact, and a legacy-mode sidecar
// that ignores SIGTERM, which docker stops from outside.
func TestDockerWorkflow(t *testing.T) {
	e := newWfEnv(t, wf.ExecutorDocker)
	t.Run("OutputsAndArtifact", func(t *testing.T) {
		tmpl := e.template("docker-outputs", "")
		tmpl.Outputs.Parameters = []wf.Parameter{
			{Name: "vol", ValueFrom: &wf.ValueFrom{Path: "/work/vol"}},
			{Name: "base", ValueFrom: &wf.ValueFrom{Path: "/tmp/base"}},
			{Name: "dflt", Default: wf.AnyStringPtr("d"), ValueFrom: &wf.ValueFrom{Path: "/tmp/none"}},
		}
		tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "tmpdir", Path: "/tmp/dir"}}
		s := newDockerStep(t, e, "docker-outputs", tmpl)
		s.busybox(t, "main", "echo on-volume > /work/vol; echo in-base-layer > /tmp/base; mkdir /tmp/dir; echo x > /tmp/dir/x; echo result-line")
		s.wait(t, wf.SidecarModeNative)
		code, log, out := s.start(t, "main", "wait")
		if code != 0 || out == nil {
			t.Fatalf("wait exited %d, outputs %+v", code, out)
		}
		want := map[string]string{"vol": "on-volume", "base": "in-base-layer", "dflt": "d"}
		for _, p := range out.Parameters {
			if p.Value == nil || string(*p.Value) != want[p.Name] {
				t.Errorf("parameter %s = %v, want %q", p.Name, p.Value, want[p.Name])
			}
		}
		if len(out.Artifacts) != 1 || out.Artifacts[0].S3 == nil || out.Artifacts[0].S3.Key != "wf/docker-outputs/tmpdir.tgz" {
			t.Errorf("artifacts = %+v", out.Artifacts)
		}
		if !strings.Contains(log, "artifact saved") {
			t.Errorf("wait log does not say the artifact was saved")
		}
	})
	t.Run("LegacySidecarIgnoringTERM", func(t *testing.T) {
		tmpl := e.template("docker-sidecar", "")
		s := newDockerStep(t, e, "docker-sidecar", tmpl)
		s.busybox(t, "main", "sleep 1")
		s.busybox(t, "stubborn", ignoreTERM)
		s.wait(t, wf.SidecarModeLegacy)
		start := time.Now()
		code, log, _ := s.start(t, "stubborn", "main", "wait")
		if code != 0 {
			t.Errorf("wait exited %d; log:\n%s", code, log)
		}
		var st struct{ State struct{ Running bool } }
		if err := s.d.Do(e.f.Context(), "GET", "/containers/"+s.ids["stubborn"]+"/json", nil, nil, &st); err != nil {
			t.Fatal(err)
		}
		if st.State.Running {
			t.Errorf("the sidecar that ignores SIGTERM still runs after wait's legacy-mode Kill")
		}
		t.Logf("legacy sidecar stopped; wait ran %s in all", time.Since(start).Round(time.Millisecond))
	})
}

func encodeB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
