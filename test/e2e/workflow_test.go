//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/argoexec/argoexec/cmd/argoexec-step/app"
	"github.com/argoexec/argoexec/executor/backends"
	"github.com/argoexec/argoexec/executor/emissary"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// wfEnv is one backend's workflow environment: a namespace with the RBAC of
// manifests/overlays/<backend>, an S3 bucket and its credentials Secret, and
// the ConfigMap the pods are built from.
type wfEnv struct {
	f       *framework.Framework
	backend string
	cfg     *config.Config
	s3      *minio.Client
	bucket  string
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := wf.DecodeStrict(data, v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

// podSecurityLevel is the Pod Security level enforced on a backend's
// workflow namespace: restricted for k8sapi and kubelet, whose init and
// wait pass it by default (pkg/podspec) and whose test mains set their own
// restricted context (mainSecurityContext). None for docker: its pods mount
// the node's Docker socket (a hostPath, which baseline already refuses)
// and its wait runs as root for the socket; TestDockerWorkflow runs them on
// dockerd directly, not through the API server, so a level would not apply.
func podSecurityLevel(backend string) []framework.Option {
	if backend == wf.ExecutorDocker {
		return nil
	}
	return []framework.Option{framework.PodSecurity("restricted")}
}

// mainSecurityContext is what Pod Security restricted asks of the test
// templates' main and sidecars (a user's container: the template sets
// it). busybox:local has no user of its own, so the uid is explicit.
func mainSecurityContext() *corev1.SecurityContext {
	sc := podspec.RestrictedSecurityContext()
	uid := int64(1000)
	sc.RunAsUser, sc.ReadOnlyRootFilesystem = &uid, nil
	return sc
}

func newWfEnv(t *testing.T, backend string) *wfEnv {
	t.Helper()
	se := framework.NewStepEnv(t, backend, podSecurityLevel(backend)...)
	return &wfEnv{f: se.F, backend: backend, cfg: se.Config, s3: se.S3, bucket: se.Bucket}
}

// stepResult is what a step left behind.
type stepResult struct {
	pod        *corev1.Pod
	outputs    *wf.NodeOutputs
	waitLog    string
	mainExited time.Time // main's terminated.finishedAt
	finished   time.Time // when the test saw the pod finish (or wait terminate)
}

// run builds the pod for tmpl, runs it, and waits until it has finished
// (Succeeded or Failed), or, with untilWaitExits, until the wait container
// has terminated (for pods whose sidecars legitimately keep them running).
func (e *wfEnv) run(t *testing.T, name string, tmpl *wf.Template, mutate func(*corev1.Pod), untilWaitExits bool) *stepResult {
	t.Helper()
	pod, err := podspec.Build(e.cfg, backends.All().Pods(), tmpl, podspec.Meta{PodName: name, Namespace: e.f.Namespace, WorkflowName: "wf", ServiceAccountName: "argoexec"})
	if err != nil {
		t.Fatalf("podspec.Build: %v", err)
	}
	if mutate != nil {
		mutate(pod)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := e.f.Client.CoreV1().Pods(e.f.Namespace)
	created, err := client.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = client.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	done := func(p *corev1.Pod) bool {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return true
		}
		if untilWaitExits {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == wf.WaitContainerName && cs.State.Terminated != nil {
					return true
				}
			}
		}
		return false
	}
	final := watchPod(ctx, t, e, name, created.ResourceVersion, done)
	res := &stepResult{pod: final, finished: time.Now()}
	for _, cs := range final.Status.ContainerStatuses {
		if cs.Name == wf.MainContainerName && cs.State.Terminated != nil {
			res.mainExited = cs.State.Terminated.FinishedAt.Time
		}
	}
	if a := final.Annotations[wf.AnnotationOutputs]; a != "" {
		res.outputs = &wf.NodeOutputs{}
		if err := json.Unmarshal([]byte(a), res.outputs); err != nil {
			t.Fatalf("outputs annotation %q: %v", a, err)
		}
	}
	res.waitLog = containerLog(ctx, e, name, wf.WaitContainerName)
	t.Logf("pod %s: phase %s; wait log:\n%s", name, final.Status.Phase, res.waitLog)
	for _, cs := range final.Status.InitContainerStatuses {
		if cs.Name == wf.InitContainerName && (cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0) {
			t.Logf("init container: %+v; log:\n%s", cs.State, containerLog(ctx, e, name, wf.InitContainerName))
		}
	}
	return res
}

func watchPod(ctx context.Context, t *testing.T, e *wfEnv, name, rv string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	client := e.f.Client.CoreV1().Pods(e.f.Namespace)
	for {
		w, err := client.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv})
		if err != nil {
			t.Fatalf("watch pod %s: %v", name, err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if done(p) {
				w.Stop()
				return p
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			p, _ := client.Get(context.Background(), name, metav1.GetOptions{})
			t.Fatalf("pod %s did not finish in time; status: %+v", name, p.Status)
		}
		p, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get pod %s: %v", name, err)
		}
		if done(p) {
			return p
		}
		rv = p.ResourceVersion
	}
}

func containerLog(ctx context.Context, e *wfEnv, pod, container string) string {
	rc, err := e.f.Client.CoreV1().Pods(e.f.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

func (r *stepResult) param(t *testing.T, name string) string {
	t.Helper()
	if r.outputs == nil {
		t.Fatalf("no outputs reported; wait log:\n%s", r.waitLog)
	}
	for _, p := range r.outputs.Parameters {
		if p.Name == name && p.Value != nil {
			return string(*p.Value)
		}
	}
	t.Fatalf("no output parameter %q in %+v", name, r.outputs.Parameters)
	return ""
}

func workVolume() ([]corev1.Volume, []corev1.VolumeMount) {
	return []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		[]corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
}

func (e *wfEnv) busybox(script string) *corev1.Container {
	_, mounts := workVolume()
	return &corev1.Container{Image: e.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c", script}, VolumeMounts: mounts,
		SecurityContext: mainSecurityContext()}
}

func (e *wfEnv) template(name, script string) *wf.Template {
	vols, _ := workVolume()
	return &wf.Template{Name: name, Container: e.busybox(script), Volumes: vols}
}

// TestWorkflow runs init and wait for real on every backend that runs pods
// on this cluster's kubelet. The docker backend needs pods running on Docker
// (cri-dockerd), which this testbed's kubelet cannot use (realk8s.md): its
// init/wait flow is covered by TestDockerWorkflow, on dockerd directly.
func TestWorkflow(t *testing.T) {
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet, emissary.ExecutorEmissary} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newWfEnv(t, backend)
			t.Run("ScriptResult", e.testScriptResult)
			t.Run("Parameters", e.testParameters)
			t.Run("MissingParameter", e.testMissingParameter)
			t.Run("Artifacts", e.testArtifacts)
			t.Run("Script200KiB", e.testBigScript)
			t.Run("NativeSidecarIgnoringTERM", e.testNativeSidecar)
			t.Run("LegacySidecarIgnoringTERM", e.testLegacySidecar)
			t.Run("DeadlineExceeded", e.testDeadline)
			t.Run("AnnotationBudget", e.testAnnotationBudget)
		})
	}
}

func (e *wfEnv) testScriptResult(t *testing.T) {
	t.Parallel()
	tmpl := &wf.Template{Name: "script", Script: &wf.ScriptTemplate{
		Container: corev1.Container{Image: e.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"}, SecurityContext: mainSecurityContext()},
		Source:    "echo hello from the script\necho 7",
	}}
	r := e.run(t, "script", tmpl, nil, false)
	if r.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s", r.pod.Status.Phase)
	}
	if r.outputs == nil || r.outputs.Result == nil || *r.outputs.Result != "hello from the script\n7" {
		t.Fatalf("result = %+v", r.outputs)
	}
	if r.outputs.ExitCode != nil {
		t.Errorf("exitCode %d in the report: wait must not wait for it (the controller reads main's status)", *r.outputs.ExitCode)
	}
	t.Logf("main exited -> pod finished seen at +%s", r.finished.Sub(r.mainExited).Round(time.Millisecond))
}

func (e *wfEnv) testParameters(t *testing.T) {
	t.Parallel()
	tmpl := e.template("params", "echo 42 > /work/answer; exit 3")
	tmpl.Outputs.Parameters = []wf.Parameter{
		{Name: "answer", ValueFrom: &wf.ValueFrom{Path: "/work/answer"}},
		{Name: "fallback", Default: wf.AnyStringPtr("the default"), ValueFrom: &wf.ValueFrom{Path: "/work/never-written"}},
	}
	r := e.run(t, "params", tmpl, nil, false)
	if got := r.param(t, "answer"); got != "42" {
		t.Errorf("answer = %q", got)
	}
	if got := r.param(t, "fallback"); got != "the default" {
		t.Errorf("fallback = %q", got)
	}
	if code := app.MainExitCode(r.pod); code == nil || *code != 3 {
		t.Errorf("main's exit code in its status = %v, want 3", code)
	}
	if r.pod.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed (main exited 3)", r.pod.Status.Phase)
	}
}

func (e *wfEnv) testMissingParameter(t *testing.T) {
	t.Parallel()
	tmpl := e.template("missing", "true")
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "needed", ValueFrom: &wf.ValueFrom{Path: "/work/not-there"}}}
	r := e.run(t, "missing", tmpl, nil, false)
	if r.pod.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", r.pod.Status.Phase)
	}
	want := `output parameter "needed": /work/not-there does not exist in container main and the parameter has no default`
	if !strings.Contains(r.waitLog, want) {
		t.Errorf("wait log does not say %q", want)
	}
	for _, cs := range r.pod.Status.ContainerStatuses {
		if cs.Name == wf.WaitContainerName && (cs.State.Terminated == nil || cs.State.Terminated.ExitCode == 0) {
			t.Errorf("wait container state %+v, want a non-zero exit", cs.State)
		}
	}
}

func (e *wfEnv) testArtifacts(t *testing.T) {
	t.Parallel()
	// Step 1 makes 3 MiB of random data in a directory and records its checksum.
	prod := e.template("produce", `mkdir -p /work/out/sub && head -c 3145728 /dev/urandom > /work/out/sub/data.bin && echo small > /work/out/a.txt && sha256sum /work/out/sub/data.bin | cut -d' ' -f1 > /work/sum`)
	prod.Outputs.Parameters = []wf.Parameter{{Name: "sum", ValueFrom: &wf.ValueFrom{Path: "/work/sum"}}}
	prod.Outputs.Artifacts = []wf.Artifact{
		{Name: "out", Path: "/work/out"},
		{Name: "raw", Path: "/work/out/a.txt", Archive: &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}},
		// a directory with archive: none: one object per file under its key, as Argo's S3 driver
		{Name: "tree", Path: "/work/out", Archive: &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}},
		{Name: "maybe", Path: "/work/none", Optional: true},
	}
	r1 := e.run(t, "produce", prod, nil, false)
	if r1.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("produce: phase %s", r1.pod.Status.Phase)
	}
	t.Logf("produce: wait's peak RSS %.1f MiB", waitPeakRSS(t, r1))
	sum := r1.param(t, "sum")
	if len(r1.outputs.Artifacts) != 3 {
		t.Fatalf("artifacts %+v, want out, raw and tree (maybe is optional and absent)", r1.outputs.Artifacts)
	}
	var outKey, treeKey string
	for _, a := range r1.outputs.Artifacts {
		if a.S3 == nil || a.S3.Bucket != e.bucket {
			t.Fatalf("artifact %s has no S3 location in bucket %s: %+v", a.Name, e.bucket, a.S3)
		}
		switch a.Name {
		case "out":
			outKey = a.S3.Key
		case "tree":
			treeKey = a.S3.Key
		}
	}
	var treeObjects []string
	for o := range e.s3.ListObjects(e.f.Context(), e.bucket, minio.ListObjectsOptions{Prefix: treeKey + "/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		treeObjects = append(treeObjects, strings.TrimPrefix(o.Key, treeKey+"/"))
	}
	if strings.Join(treeObjects, ",") != "a.txt,sub/data.bin" {
		t.Errorf("tree (archive: none) stored as %v under %s/, want a.txt and sub/data.bin", treeObjects, treeKey)
	}
	// The raw artifact is stored byte-exact.
	obj, err := e.s3.GetObject(e.f.Context(), e.bucket, "wf/produce/raw.tgz", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(obj); string(b) != "small\n" {
		t.Errorf("raw artifact = %q", b)
	}
	// Step 2 loads it as an input artifact and checks the data.
	cons := e.template("consume", `sha256sum /in/out/sub/data.bin | cut -d' ' -f1 > /work/sum; cat /in/out/a.txt > /work/a; cat /in/greeting > /work/greeting; sha256sum /in/tree/sub/data.bin | cut -d' ' -f1 > /work/treesum`)
	cons.Inputs.Artifacts = []wf.Artifact{
		{Name: "out", Path: "/in/out", S3: &wf.S3Artifact{Key: outKey}},
		{Name: "tree", Path: "/in/tree", S3: &wf.S3Artifact{Key: treeKey}}, // a key prefix: the directory
		{Name: "greeting", Path: "/in/greeting", Raw: &wf.RawArtifact{Data: "hi there"}},
		{Name: "absent", Path: "/in/absent", Optional: true, S3: &wf.S3Artifact{Key: "does/not/exist.tgz"}},
	}
	cons.Outputs.Parameters = []wf.Parameter{
		{Name: "sum", ValueFrom: &wf.ValueFrom{Path: "/work/sum"}},
		{Name: "a", ValueFrom: &wf.ValueFrom{Path: "/work/a"}},
		{Name: "greeting", ValueFrom: &wf.ValueFrom{Path: "/work/greeting"}},
		{Name: "treesum", ValueFrom: &wf.ValueFrom{Path: "/work/treesum"}},
	}
	r2 := e.run(t, "consume", cons, nil, false)
	if r2.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("consume: phase %s", r2.pod.Status.Phase)
	}
	if got := r2.param(t, "sum"); got != sum {
		t.Errorf("consumer saw sha256 %s, producer wrote %s", got, sum)
	}
	if got := r2.param(t, "treesum"); got != sum {
		t.Errorf("consumer saw sha256 %s in the directory input, producer wrote %s", got, sum)
	}
	if got := r2.param(t, "a"); got != "small" {
		t.Errorf("a = %q", got)
	}
	if got := r2.param(t, "greeting"); got != "hi there" {
		t.Errorf("greeting = %q", got)
	}
}

func (e *wfEnv) testBigScript(t *testing.T) {
	t.Parallel()
	src := strings.Repeat("# padding line to make the script large\n", 200*1024/40) + "echo big script ran"
	tmpl := &wf.Template{Name: "big", Script: &wf.ScriptTemplate{
		Container: corev1.Container{Image: e.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"}, SecurityContext: mainSecurityContext()},
		Source:    src,
	}}
	r := e.run(t, "big-script", tmpl, nil, false)
	if r.outputs == nil || r.outputs.Result == nil || *r.outputs.Result != "big script ran" {
		t.Fatalf("a %d-byte script: outputs %+v, phase %s", len(src), r.outputs, r.pod.Status.Phase)
	}
}

const ignoreTERM = `trap '' TERM; while true; do sleep 1 & wait $!; done`

func (e *wfEnv) sidecarTemplate(name string) *wf.Template {
	tmpl := e.template(name, "sleep 2")
	tmpl.Sidecars = []wf.UserContainer{{Container: corev1.Container{Name: "stubborn", Image: e.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c", ignoreTERM},
		SecurityContext: mainSecurityContext()}}}
	return tmpl
}

func (e *wfEnv) testNativeSidecar(t *testing.T) {
	t.Parallel()
	const grace = 3
	r := e.run(t, "native-sidecar", e.sidecarTemplate("native"), func(p *corev1.Pod) {
		g := int64(grace)
		p.Spec.TerminationGracePeriodSeconds = &g
	}, false)
	if r.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded", r.pod.Status.Phase)
	}
	// The kubelet stops a native sidecar once main AND wait have exited, so
	// the clock starts at wait's exit. Beyond the grace period it needs a
	// relist to see wait exit, one to see the sidecar die, and a status
	// update the watch then delivers; finishedAt has 1 s resolution. Measured
	// here: grace + 3.9 s on a quiet machine. The bound, grace + 6 s, is far
	// below the 30 s default grace and the never of Argo v3.3.8.
	var waitExited time.Time
	for _, cs := range r.pod.Status.ContainerStatuses {
		if cs.Name == wf.WaitContainerName && cs.State.Terminated != nil {
			waitExited = cs.State.Terminated.FinishedAt.Time
		}
	}
	if waitExited.IsZero() {
		t.Fatalf("no terminated state for wait: %+v", r.pod.Status.ContainerStatuses)
	}
	d := r.finished.Sub(waitExited)
	t.Logf("sidecar ignoring TERM: main exited -> wait exited %s -> pod Succeeded %s later (grace %ds)",
		waitExited.Sub(r.mainExited), d.Round(time.Millisecond), grace)
	// Issue 12, defect 5 (wait once exited 12 s after main on the kubelet
	// backend): wait's log says which path ended its wait for main, and once
	// it has ended nothing reads the pod status again (the report never
	// waits for the exit code); a /pods read that stalls is cut at
	// kubelet.DefaultPollTimeout (TestWaitStalledPollIsBounded).
	_, after, ended := strings.Cut(r.waitLog, "msg=\"wait ended: ")
	switch {
	case e.backend == emissary.ExecutorEmissary:
		// its wait ends on main's exit code file: no exec session, no pod status
	case !ended || !strings.Contains(after, "endedBy=exec") && !strings.Contains(after, "endedBy=status"):
		t.Errorf("wait's log does not say which path ended its wait for main (endedBy=exec|status)")
	case strings.Contains(after, "of /pods failed") || strings.Contains(after, "waiting for the pod status"):
		t.Errorf("wait read the pod status after its wait for main had ended")
	}
	if strings.Contains(r.waitLog, "no answer within the poll timeout") {
		t.Logf("a /pods read stalled and was cut at the poll timeout (see wait's log)")
	}
	if d > (grace+6)*time.Second {
		t.Errorf("pod Succeeded %s after wait exited; want within grace (%ds) + 6s", d.Round(time.Millisecond), grace)
	}
}

func (e *wfEnv) testLegacySidecar(t *testing.T) {
	t.Parallel()
	saved := *e.cfg
	cfg := saved
	cfg.SidecarMode = wf.SidecarModeLegacy
	le := *e
	le.cfg = &cfg
	r := le.run(t, "legacy-sidecar", e.sidecarTemplate("legacy"), nil, true)
	if e.backend == emissary.ExecutorEmissary {
		// The wrapper is the sidecar's PID 1 and signals its child's process group: the
		// SIGKILL after the grace stops what ignored SIGTERM, and nothing survives.
		if strings.Contains(r.waitLog, "survive") || strings.Contains(r.waitLog, "PID 1") {
			t.Errorf("wait log reports a survivor on emissary, where SIGKILL reaches the sidecar:\n%s", r.waitLog)
		}
		for _, cs := range r.pod.Status.ContainerStatuses {
			if cs.Name == wf.WaitContainerName && (cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0) {
				t.Errorf("wait %+v, want exit 0 (the sidecar stopped)", cs.State)
			}
		}
		return
	}
	want := `container "stubborn"`
	if !strings.Contains(r.waitLog, want) || !strings.Contains(r.waitLog, "PID 1") {
		t.Errorf("wait log does not report the surviving sidecar by name (%s) and why", want)
	}
}

func (e *wfEnv) testDeadline(t *testing.T) {
	t.Parallel()
	tmpl := e.template("deadline", "echo partial > /work/p; sleep 600")
	d := int64(5)
	tmpl.ActiveDeadlineSeconds = &d
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "p", ValueFrom: &wf.ValueFrom{Path: "/work/p"}}}
	start := time.Now()
	r := e.run(t, "deadline", tmpl, nil, false)
	if r.pod.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", r.pod.Status.Phase)
	}
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("a 5 s deadline took %s to end the pod", took)
	}
	t.Logf("deadline: reason %q, pod ended %s after creation", r.pod.Status.Reason, time.Since(start).Round(time.Millisecond))
	// What main wrote before the deadline is saved.
	if got := r.param(t, "p"); got != "partial" {
		t.Errorf("parameter p = %q, want what main wrote before the deadline", got)
	}
}

func (e *wfEnv) testAnnotationBudget(t *testing.T) {
	t.Parallel()
	tmpl := e.template("budget", `head -c 153600 /dev/zero | tr '\0' a > /work/p1; head -c 153600 /dev/zero | tr '\0' b > /work/p2`)
	tmpl.Outputs.Parameters = []wf.Parameter{
		{Name: "p1", ValueFrom: &wf.ValueFrom{Path: "/work/p1"}},
		{Name: "p2", ValueFrom: &wf.ValueFrom{Path: "/work/p2"}},
	}
	r := e.run(t, "budget", tmpl, nil, false)
	if r.pod.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", r.pod.Status.Phase)
	}
	for _, want := range []string{"annotation budget", "output parameter p", "output artifact"} {
		if !strings.Contains(r.waitLog, want) {
			t.Errorf("wait log does not say %q", want)
		}
	}
}
