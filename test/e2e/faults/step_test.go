//go:build e2e

package faults

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendreg "github.com/argoexec/argoexec/executor/backends"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/podspec"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// A step of the fault suite: main (a busybox script) says it started, then waits for the test
// to release it, then writes a parameter, an artifact directory and its result, all random per
// step, and exits 0. The test and main meet in a host directory mounted into main at /sync:
// nothing there needs the API server, the kubelet or containerd, which the faults stop.
const mainScript = `echo started > /sync/started
while [ ! -e /sync/go ]; do sleep 0.1; done
mkdir -p /work/out/sub
cp /sync/data.bin /work/out/sub/data.bin
cp /sync/answer /work/answer
touch /sync/done
cat /sync/result`

type step struct {
	e      *framework.StepEnv
	name   string
	dir    string // host dir, /sync in main
	answer string
	result string
	data   []byte
	pod    *corev1.Pod // as created
	log    *os.File    // wait's log on the node, opened once it exists (read after the pod is gone)
	tokens *tokenFile  // wait's service-account directory, when the case gives it one
	// template is the step's template; docker runs it on dockerd instead of in a kubelet pod.
	template *wf.Template
	docker   *dockerRun
}

func randHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newStep writes the step's inputs into a fresh host directory and creates its pod, changed
// by mutate when it is not nil.
func newStep(ctx context.Context, t *testing.T, e *framework.StepEnv, name string, mutate func(context.Context, *testing.T, *step, *corev1.Pod)) *step {
	t.Helper()
	dir, err := os.MkdirTemp("", "argoexec-faults-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &step{e: e, name: name, dir: dir,
		answer: "answer " + randHex(t, 8) + "\nsecond line, ünïcode",
		result: "result " + randHex(t, 8),
		data:   make([]byte, 768<<10),
	}
	if _, err := rand.Read(s.data); err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{"answer": []byte(s.answer), "result": []byte(s.result), "data.bin": s.data} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hostDir := corev1.HostPathDirectory
	tmpl := &wf.Template{
		Name: name,
		Script: &wf.ScriptTemplate{
			Container: corev1.Container{Image: e.F.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"},
				VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}, {Name: "sync", MountPath: "/sync"}}},
			Source: mainScript,
		},
		Volumes: []corev1.Volume{
			{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "sync", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostDir}}},
		},
		Outputs: wf.Outputs{
			Parameters: []wf.Parameter{{Name: "answer", ValueFrom: &wf.ValueFrom{Path: "/work/answer"}}},
			Artifacts:  []wf.Artifact{{Name: "out", Path: "/work/out"}},
		},
	}
	s.template = tmpl
	if e.Backend == wf.ExecutorDocker {
		newDockerStep(ctx, t, s)
		return s
	}
	pod, err := podspec.Build(e.Config, backendreg.All().Pods(), tmpl, podspec.Meta{PodName: name, Namespace: e.F.Namespace, WorkflowName: "wf", ServiceAccountName: "argoexec"})
	if err != nil {
		t.Fatalf("podspec.Build: %v", err)
	}
	if mutate != nil {
		mutate(ctx, t, s, pod)
	}
	s.pod = e.F.CreatePod(ctx, pod)
	t.Cleanup(func() {
		if s.log != nil {
			s.log.Close()
		}
		zero := int64(0)
		_ = e.F.Client.CoreV1().Pods(e.F.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return s
}

// poll calls cond every 100 ms until it is true or ctx ends; it says what it waited for.
func poll(ctx context.Context, what string, cond func() bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return errors.New("timed out waiting for " + what)
		case <-tick.C:
		}
	}
	return nil
}

func (s *step) exists(name string) bool {
	_, err := os.Stat(filepath.Join(s.dir, name))
	return err == nil
}

// waitLog is what wait has logged so far (read from the node's log file, so it needs no API).
func (s *step) waitLog() string {
	if s.docker != nil {
		return s.docker.log()
	}
	if s.log == nil {
		pattern := filepath.Join("/var/log/pods", s.e.F.Namespace+"_"+s.name+"_"+string(s.pod.UID), wf.WaitContainerName, "*.log")
		m, _ := filepath.Glob(pattern)
		if len(m) == 0 {
			return ""
		}
		f, err := os.Open(m[0])
		if err != nil {
			return ""
		}
		s.log = f
	}
	b, _ := io.ReadAll(io.NewSectionReader(s.log, 0, 1<<30))
	return string(b)
}

// untilWaiting returns once main runs and wait has logged that it waits for main.
func (s *step) untilWaiting(ctx context.Context) error {
	return poll(ctx, "main to start and wait to wait for it ("+s.name+")", func() bool {
		return s.exists("started") && strings.Contains(s.waitLog(), "waiting for main to exit")
	})
}

// untilLogged returns once wait's log holds text.
func (s *step) untilLogged(ctx context.Context, text string) error {
	return poll(ctx, "wait of "+s.name+" to log "+text, func() bool { return strings.Contains(s.waitLog(), text) })
}

// release lets main write its outputs and exit.
func (s *step) release(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// untilMainDone returns once main has written its outputs (it exits right after).
func (s *step) untilMainDone(ctx context.Context) error {
	return poll(ctx, "main of "+s.name+" to write its outputs", func() bool { return s.exists("done") })
}

// finish waits (by watch, which resumes across API-server restarts) for the pod to end.
func (s *step) finish(ctx context.Context) (*corev1.Pod, error) {
	if s.docker != nil {
		return s.docker.finish(ctx, s)
	}
	return s.e.F.WaitForPod(ctx, s.name, func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
}

// outputs decodes the outputs annotation; nil when there is none.
func outputs(t *testing.T, p *corev1.Pod) *wf.NodeOutputs {
	t.Helper()
	a, ok := p.Annotations[wf.AnnotationOutputs]
	if !ok {
		return nil
	}
	var o wf.NodeOutputs
	if err := json.Unmarshal([]byte(a), &o); err != nil {
		t.Fatalf("outputs annotation %q: %v", a, err)
	}
	return &o
}

// checkIntact fails unless the pod Succeeded with every output byte for byte: the parameter,
// the result and the artifact (downloaded from S3 and unpacked).
func (s *step) checkIntact(ctx context.Context, t *testing.T, p *corev1.Pod) {
	t.Helper()
	s.checkIntactBut(ctx, t, p, true)
}

// checkIntactBut is checkIntact, with the result checked only when result is true; it returns
// the outputs.
func (s *step) checkIntactBut(ctx context.Context, t *testing.T, p *corev1.Pod, result bool) *wf.NodeOutputs {
	t.Helper()
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded: %s\nwait log:\n%s", p.Status.Phase, framework.DescribeStatuses(p), s.waitLog())
	}
	o := outputs(t, p)
	if o == nil {
		t.Fatalf("no outputs annotation; wait log:\n%s", s.waitLog())
	}
	if len(o.Parameters) != 1 || o.Parameters[0].Value == nil || string(*o.Parameters[0].Value) != s.answer {
		t.Errorf("parameters %+v, want answer = %q", o.Parameters, s.answer)
	}
	if result && (o.Result == nil || *o.Result != s.result) {
		got := "none"
		if o.Result != nil {
			got = fmt.Sprintf("%q", *o.Result)
		}
		t.Errorf("result %s, want %q", got, s.result)
	}
	if len(o.Artifacts) != 1 || o.Artifacts[0].S3 == nil {
		t.Fatalf("artifacts %+v, want one in S3", o.Artifacts)
	}
	got := s.artifactFile(ctx, t, o.Artifacts[0], "out/sub/data.bin")
	if !bytes.Equal(got, s.data) {
		t.Errorf("artifact out/sub/data.bin: %d bytes, not the %d main wrote", len(got), len(s.data))
	}
	return o
}

// artifactFile downloads the artifact's .tgz and returns the named entry.
func (s *step) artifactFile(ctx context.Context, t *testing.T, a wf.Artifact, name string) []byte {
	t.Helper()
	obj, err := s.e.S3.GetObject(ctx, s.e.Bucket, a.S3.Key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("artifact %s: get s3://%s/%s: %v", a.Name, s.e.Bucket, a.S3.Key, err)
	}
	defer obj.Close()
	zr, err := gzip.NewReader(obj)
	if err != nil {
		t.Fatalf("artifact %s: s3://%s/%s: %v", a.Name, s.e.Bucket, a.S3.Key, err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("artifact %s: %v", a.Name, err)
		}
		names = append(names, h.Name)
		if strings.TrimPrefix(h.Name, "./") == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("artifact %s: %s: %v", a.Name, name, err)
			}
			return b
		}
	}
	t.Fatalf("artifact %s has no %s; entries %v", a.Name, name, names)
	return nil
}

// checkReportedExist fails if the report names an artifact whose object is not in S3.
func (s *step) checkReportedExist(ctx context.Context, t *testing.T, o *wf.NodeOutputs) {
	t.Helper()
	if o == nil {
		return
	}
	for _, a := range o.Artifacts {
		if a.S3 == nil {
			continue
		}
		if _, err := s.e.S3.StatObject(ctx, s.e.Bucket, a.S3.Key, minio.StatObjectOptions{}); err != nil {
			t.Errorf("the report names artifact %s at s3://%s/%s, which does not exist: %v", a.Name, s.e.Bucket, a.S3.Key, err)
		}
	}
}
