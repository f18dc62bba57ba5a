//go:build e2e && bench

package e2e

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/backends"
	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/k8sapi"
	"github.com/argoexec/argoexec/executor/kubelet"
	"github.com/argoexec/argoexec/internal/benchreport"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/podspec"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// TestBench is `make bench` (hack/bench.sh): every figure of BENCHMARKS.md's generated block,
// from one run on the testbed, ours beside Argo v3.3.8's own argoexec where there is one.
// It reuses the e2e tier's measurements (TestArgoFigures' measureStepWith, the containerd
// event follower, the cgroup sampler, the audit-log and kubelet-metrics counters, and the copy
// throughput tests' copyVsKubectl) and adds the bare-pod baseline, the steps under our own
// pod builder, and the concurrency run. The build tag bench keeps it out of the e2e tier;
// `make test` runs it once as a smoke (one repetition each, small sizes, nothing written).
//
// ARGOEXEC_BENCH_* (hack/bench.sh sets them; the defaults are the smoke's):
//
//	REPS          repetitions of each step and copy (1)
//	BIG_REPS      repetitions of the big-artifact step (1); BIG_MIB its size (16)
//	COPY_MIB      CopyFile sizes, comma-separated (16)
//	CONCURRENCY   concurrent steps, comma-separated (2); CONC_MIB each step's artifact (8)
//	OUT           BENCHMARKS.md to rewrite the generated block of (unset: write nothing)
//	CHARTS        directory for the SVG charts, relative to OUT's directory (docs/bench)
//	COMMAND       the command line recorded in the report
func TestBench(t *testing.T) {
	cfg := benchConfig{
		reps: argoEnvInt("ARGOEXEC_BENCH_REPS", 1), bigReps: argoEnvInt("ARGOEXEC_BENCH_BIG_REPS", 1),
		bigMiB: argoEnvInt("ARGOEXEC_BENCH_BIG_MIB", 16), copyMiB: envInts("ARGOEXEC_BENCH_COPY_MIB", "16"),
		conc: envInts("ARGOEXEC_BENCH_CONCURRENCY", "2"), concMiB: argoEnvInt("ARGOEXEC_BENCH_CONC_MIB", 8),
		out: os.Getenv("ARGOEXEC_BENCH_OUT"), charts: argoGetenv("ARGOEXEC_BENCH_CHARTS", "docs/bench"),
		command: argoGetenv("ARGOEXEC_BENCH_COMMAND", "hack/bench.sh"),
	}
	b := &bench{cfg: cfg, started: time.Now(), loadStart: loadAvg(), series: map[string][]benchStep{},
		copies: map[string]*copySeries{}}
	b.te = startTaskExits(t)
	env := framework.LoadEnv()
	kc, err := kubeletMetricsClient(env)
	if err != nil {
		t.Fatal(err)
	}
	b.kc = kc
	t.Run("Steps", b.steps)
	t.Run("BigArtifact", b.bigArtifact)
	t.Run("Copy", b.copy)
	t.Run("Concurrency", b.concurrency)
	b.took = time.Since(b.started)
	b.loadEnd = loadAvg()
	report, charts := b.report(t)
	t.Logf("make bench: %s\n%s", b.took.Round(time.Second), report)
	if cfg.out == "" {
		return
	}
	doc, err := os.ReadFile(cfg.out)
	if err != nil {
		t.Fatal(err)
	}
	updated, err := benchreport.ReplaceBlock(string(doc), report, "## ")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(cfg.out), cfg.charts)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, svg := range charts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(svg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cfg.out, []byte(updated), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote the generated block of %s and %d charts in %s", cfg.out, len(charts), dir)
}

type benchConfig struct {
	reps, bigReps, bigMiB, concMiB int
	copyMiB, conc                  []int
	out, charts, command           string
}

// bench holds one run's measurements.
type bench struct {
	cfg                 benchConfig
	te                  *taskExits
	kc                  *http.Client
	started             time.Time
	took                time.Duration
	loadStart, loadEnd  string
	series              map[string][]benchStep // "controller/image/backend" (and "bare") -> runs
	big                 map[string][]benchStep
	copies              map[string]*copySeries // "backend/MiB"
	conc                []concRun
	seriesOrder, bigOrd []string
}

// benchStep is one step's figures; a negative duration or count was not measured.
type benchStep struct {
	exitToReported, createdToStarted, createdToDone time.Duration
	waitHWM, initHWM                                int64
	waitCPU, initCPU                                time.Duration
	requests                                        int
	requestKinds, kubelet                           map[string]int
}

func envInts(key, def string) []int {
	var out []int
	for _, s := range strings.Split(argoGetenv(key, def), ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && v > 0 {
			out = append(out, v)
		}
	}
	return out
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func (b *bench) add(key string, s benchStep) {
	if _, ok := b.series[key]; !ok {
		b.seriesOrder = append(b.seriesOrder, key)
	}
	b.series[key] = append(b.series[key], s)
}

func fromArgo(f *stepFigures) benchStep {
	return benchStep{exitToReported: f.exitToResult, createdToStarted: -1, createdToDone: f.createdToDone,
		waitHWM: f.waitHWM, waitCPU: f.waitCPU, initHWM: f.initHWM, initCPU: f.initCPU,
		requests: f.requests, requestKinds: f.requestKinds, kubelet: f.kubelet}
}

// ---------------------------------------------------------------- figures 1-4

// benchStepScript is the anchor's step (anchor-figures.md) under our pod builder: a script
// that writes an output parameter to an emptyDir.
const benchStepScript = "echo hello; echo 42 > /work/out"

// steps runs, interleaved, REPS times: a bare pod running the same main container; the step
// under our pod builder (pkg/podspec, what our controller creates) on k8sapi and kubelet; and
// the step under Argo's controller with Argo's argoexec (k8sapi, kubelet, emissary) and ours
// (k8sapi, kubelet).
func (b *bench) steps(t *testing.T) {
	envs, audited := map[string]*wfEnv{}, map[string]*wfEnv{}
	runLabel := runLabelFor("bench")
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
		envs[backend] = newWfEnv(t, backend)
		audited[backend] = auditedEnv(t, envs[backend], runLabel+"-"+backend)
	}
	upstream, ours := argoFor(t, "upstream", runLabel), argoFor(t, "ours", runLabel)
	type argoCase struct {
		a       *framework.Argo
		backend string
	}
	argoCases := []argoCase{{upstream, "k8sapi"}, {ours, "k8sapi"}, {upstream, "kubelet"}, {ours, "kubelet"}, {upstream, "emissary"}}
	for i := range b.cfg.reps {
		t.Run(fmt.Sprintf("bare/%d", i), func(t *testing.T) {
			s, err := b.bareStep(t, envs[wf.ExecutorK8sAPI], fmt.Sprintf("bare-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			b.add("bare", s)
		})
		for _, v := range []struct{ suffix, script string }{{"", benchStepScript}, {"/sleep2", "sleep 2; " + benchStepScript}} {
			for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
				t.Run(fmt.Sprintf("podspec/%s%s/%d", backend, v.suffix, i), func(t *testing.T) {
					tmpl := benchScript(envs[backend], "step", v.script)
					tmpl.Outputs.Parameters = []wf.Parameter{{Name: "out", ValueFrom: &wf.ValueFrom{Path: "/work/out"}}}
					name := fmt.Sprintf("%s-step-%s%s-%d", runLabel, backend, strings.ReplaceAll(v.suffix, "/", "-"), i)
					s, err := b.oursStep(t, audited[backend], runLabel+"-"+backend, name, tmpl, 2*time.Minute)
					if err != nil {
						t.Fatal(err)
					}
					b.add("podspec/ours/"+backend+v.suffix, s)
				})
			}
		}
		for _, c := range argoCases {
			key := "argo/" + c.a.Controller.Name + "/" + c.backend
			t.Run(fmt.Sprintf("%s/%d", key, i), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				name := fmt.Sprintf("%s-%s-%s-%d", runLabel, c.a.Controller.Name, c.backend, i)
				f, err := measureStep(ctx, t, c.a, b.te, b.kc, c.backend, name)
				if err != nil {
					t.Fatal(err)
				}
				b.add(key, fromArgo(f))
			})
		}
	}
}

// benchAuditNS is Argo's namespace for our image (hack/argo.sh): the audit policy covers its
// service accounts, so the steps under our pod builder run there to have their requests counted.
const benchAuditNS = "argo-ours"

// auditedEnv returns a copy of e whose pods run in benchAuditNS as a service account of their
// own, with the RBAC of manifests/base (pods get/watch/patch, pods/log, pods/exec) and the kubelet
// overlay's nodes/proxy, and upload to that namespace's bucket with its S3 Secret (hack/argo.sh).
// Argo's controller there ignores the pods: they carry no workflows.argoproj.io/workflow label
// (oursStep removes it).
func auditedEnv(t *testing.T, e *wfEnv, name string) *wfEnv {
	t.Helper()
	ctx := e.f.Context()
	c := e.f.Client
	if _, err := c.CoreV1().ServiceAccounts(benchAuditNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account %s/%s: %v", benchAuditNS, name, err)
	}
	if _, err := c.RbacV1().Roles(benchAuditNS).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role %s/%s: %v", benchAuditNS, name, err)
	}
	subj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: benchAuditNS}}
	if _, err := c.RbacV1().RoleBindings(benchAuditNS).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}, Subjects: subj}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role binding %s/%s: %v", benchAuditNS, name, err)
	}
	cr := "argoexec-e2e-" + benchAuditNS + "-" + name
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: cr, Labels: map[string]string{framework.LabelE2E: "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get", "create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create cluster role %s: %v", cr, err)
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr, Labels: map[string]string{framework.LabelE2E: "true"}},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr}, Subjects: subj}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create cluster role binding %s: %v", cr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.RbacV1().ClusterRoleBindings().Delete(ctx, cr, metav1.DeleteOptions{})
		_ = c.RbacV1().ClusterRoles().Delete(ctx, cr, metav1.DeleteOptions{})
		_ = c.RbacV1().RoleBindings(benchAuditNS).Delete(ctx, name, metav1.DeleteOptions{})
		_ = c.RbacV1().Roles(benchAuditNS).Delete(ctx, name, metav1.DeleteOptions{})
		_ = c.CoreV1().ServiceAccounts(benchAuditNS).Delete(ctx, name, metav1.DeleteOptions{})
	})
	fw := *e.f
	fw.Namespace = benchAuditNS
	cfg := *e.cfg
	s3 := *cfg.ArtifactRepository.S3
	s3.Bucket = benchAuditNS
	s3.AccessKeySecret = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "argo-s3"}, Key: "accesskey"}
	s3.SecretKeySecret = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "argo-s3"}, Key: "secretkey"}
	cfg.ArtifactRepository.S3 = &s3
	return &wfEnv{f: &fw, backend: e.backend, cfg: &cfg, bucket: benchAuditNS}
}

// benchScript is a script template of busybox with /work on an emptyDir.
func benchScript(e *wfEnv, name, source string) *wf.Template {
	c := e.busybox("")
	c.Command = []string{"sh"}
	vols, _ := workVolume()
	return &wf.Template{Name: name, Script: &wf.ScriptTemplate{Container: *c, Source: source}, Volumes: vols}
}

// timedPod is what runTimedPod saw of one pod.
type timedPod struct {
	created, reported, done time.Time
	pod                     *corev1.Pod
	wait, init              *waitSampler
}

// runTimedPod creates pod and follows it with a watch until it has finished: when the watch
// saw it ADDED, when it first carried the outputs annotation, and when it Succeeded; with
// sample, wait's and init's cgroups are sampled while they run.
func runTimedPod(ctx context.Context, e *wfEnv, pod *corev1.Pod, sample bool) (*timedPod, error) {
	client := e.f.Client.CoreV1().Pods(e.f.Namespace)
	w, err := client.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
	if err != nil {
		return nil, fmt.Errorf("watch pod %s: %w", pod.Name, err)
	}
	defer w.Stop()
	if _, err := client.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	tp := &timedPod{}
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	var waitC, initC chan *waitSampler
	for tp.done.IsZero() {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pod %s/%s did not finish: %w", e.f.Namespace, pod.Name, ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("pod watch of %s closed", pod.Name)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			now := time.Now()
			if tp.created.IsZero() {
				tp.created = now
				if sample {
					waitC, initC = make(chan *waitSampler, 1), make(chan *waitSampler, 1)
					uid := string(p.UID)
					go func() { waitC <- sampleWait(sctx, uid) }()
					go func() { initC <- sampleArgoexec(sctx, uid, "init") }()
				}
			}
			if tp.reported.IsZero() && p.Annotations[wf.AnnotationOutputs] != "" {
				tp.reported = now
			}
			tp.pod = p
			switch p.Status.Phase {
			case corev1.PodSucceeded:
				tp.done = now
			case corev1.PodFailed:
				return nil, fmt.Errorf("pod %s/%s failed: %s", e.f.Namespace, pod.Name, framework.DescribeStatuses(p))
			}
		}
	}
	for _, c := range []struct {
		ch  chan *waitSampler
		dst **waitSampler
	}{{waitC, &tp.wait}, {initC, &tp.init}} {
		if c.ch == nil {
			continue
		}
		select {
		case s := <-c.ch:
			*c.dst = s
		case <-time.After(5 * time.Second):
			scancel()
			*c.dst = <-c.ch
		}
	}
	return tp, nil
}

func containerID(p *corev1.Pod, name string) string {
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.Name == name {
			return strings.TrimPrefix(cs.ContainerID, "containerd://")
		}
	}
	return ""
}

// bareStep runs the step's main container alone, in a pod of its own.
func (b *bench) bareStep(t *testing.T, e *wfEnv, name string) (benchStep, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vols, _ := workVolume()
	c := e.busybox(benchStepScript)
	c.Name = wf.MainContainerName
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.f.Namespace},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{*c}, Volumes: vols}}
	tp, err := runTimedPod(ctx, e, pod, false)
	if err != nil {
		return benchStep{}, err
	}
	defer deletePod(e, name)
	s := benchStep{exitToReported: -1, createdToStarted: -1, createdToDone: tp.done.Sub(tp.created), requests: -1}
	if at, ok := b.te.startOf(containerID(tp.pod, wf.MainContainerName)); ok {
		s.createdToStarted = at.Sub(tp.created)
	}
	return s, nil
}

func deletePod(e *wfEnv, name string) {
	zero := int64(0)
	_ = e.f.Client.CoreV1().Pods(e.f.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// oursStep runs tmpl as the pod our controller builds for it (pkg/podspec) and measures it:
// main's exit (containerd) -> the outputs annotation seen by a watch, pod created -> main
// started (containerd) and -> Succeeded, wait's and init's peak RSS and CPU, and the kubelet's
// request counters during the step.
func (b *bench) oursStep(t *testing.T, e *wfEnv, sa, name string, tmpl *wf.Template, timeout time.Duration) (benchStep, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pod, err := podspec.Build(e.cfg, backends.All().Pods(), tmpl, podspec.Meta{PodName: name, Namespace: e.f.Namespace, WorkflowName: "bench", ServiceAccountName: sa})
	if err != nil {
		return benchStep{}, fmt.Errorf("podspec.Build: %w", err)
	}
	delete(pod.Labels, wf.LabelWorkflow) // Argo's controller in benchAuditNS selects pods by it
	auditLog := filepath.Join(e.f.Env.State, "logs", "audit.log")
	auditFrom := argoFileSize(auditLog)
	kc := b.kc
	before, kerr := kubeletRequests(kc, e.f.Env)
	tp, err := runTimedPod(ctx, e, pod, true)
	if err != nil {
		return benchStep{}, err
	}
	defer deletePod(e, name)
	s := benchStep{createdToStarted: -1, createdToDone: tp.done.Sub(tp.created), requests: -1}
	if after, err := kubeletRequests(kc, e.f.Env); err == nil && kerr == nil {
		s.kubelet = map[string]int{}
		for k, v := range after {
			if d := v - before[k]; d > 0 && !strings.HasSuffix(k, " metrics") {
				s.kubelet[k] = d
			}
		}
	}
	mainID := containerID(tp.pod, wf.MainContainerName)
	if at, ok := b.te.startOf(mainID); ok {
		s.createdToStarted = at.Sub(tp.created)
	}
	ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
	exitAt, err := b.te.exitOf(ectx, mainID)
	ecancel()
	if err != nil {
		return benchStep{}, err
	}
	if tp.reported.IsZero() {
		return benchStep{}, fmt.Errorf("pod %s Succeeded without the outputs annotation", name)
	}
	s.exitToReported = tp.reported.Sub(exitAt)
	var outs wf.NodeOutputs
	if err := json.Unmarshal([]byte(tp.pod.Annotations[wf.AnnotationOutputs]), &outs); err != nil {
		return benchStep{}, fmt.Errorf("pod %s: outputs annotation: %w", name, err)
	}
	if len(tmpl.Outputs.Parameters) > 0 && (len(outs.Parameters) != 1 || outs.Parameters[0].Value == nil || strings.TrimSpace(string(*outs.Parameters[0].Value)) != "42") {
		return benchStep{}, fmt.Errorf("pod %s: outputs %+v, want out = 42", name, outs)
	}
	if len(tmpl.Outputs.Artifacts) > 0 && len(outs.Artifacts) != len(tmpl.Outputs.Artifacts) {
		return benchStep{}, fmt.Errorf("pod %s: outputs %+v, want %d artifacts", name, outs, len(tmpl.Outputs.Artifacts))
	}
	if tp.wait != nil && tp.wait.found {
		s.waitHWM, s.waitCPU = tp.wait.hwm, time.Duration(tp.wait.cpu)
	}
	if tp.init != nil && tp.init.found {
		s.initHWM, s.initCPU = tp.init.hwm, time.Duration(tp.init.cpu)
	}
	time.Sleep(time.Second) // the watch's audit event is written when the watch ends, with wait
	if s.requests, s.requestKinds, err = auditEvents(auditLog, auditFrom, e.f.Namespace, name); err != nil {
		t.Logf("audit log %s: %v (hack/cluster.sh starts the API server with it)", auditLog, err)
		s.requests = -1
	}
	return s, nil
}

// ---------------------------------------------------------------- figure 3, big artifact

// benchBigWorkflow: main writes %d MiB of random data to an emptyDir, an output artifact.
const benchBigWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: %%s
spec:
  entrypoint: step
  templates:
  - name: step
    script:
      image: alpine:3.7
      command: [sh]
      source: |
        head -c %d /dev/urandom > /work/data.bin
      volumeMounts: [{name: work, mountPath: /work}]
    volumes: [{name: work, emptyDir: {}}]
    outputs:
      artifacts:
      - name: data
        path: /work/data.bin
`

func wantSucceeded(_ context.Context, _ *framework.Argo, final *unstructured.Unstructured) error {
	if p, _, _ := unstructured.NestedString(final.Object, "status", "phase"); p != "Succeeded" {
		m, _, _ := unstructured.NestedString(final.Object, "status", "message")
		return fmt.Errorf("workflow %s: %s (%q)", final.GetName(), p, m)
	}
	return nil
}

// bigArtifact runs a step whose main writes BIG_MIB of random data that wait archives (gzip
// at the default level) and uploads to S3: under our pod builder and under Argo's controller
// with both images, k8sapi and kubelet, interleaved.
func (b *bench) bigArtifact(t *testing.T) {
	b.big = map[string][]benchStep{}
	add := func(key string, s benchStep) {
		if _, ok := b.big[key]; !ok {
			b.bigOrd = append(b.bigOrd, key)
		}
		b.big[key] = append(b.big[key], s)
	}
	envs := map[string]*wfEnv{}
	runLabel := runLabelFor("big")
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
		envs[backend] = auditedEnv(t, newWfEnv(t, backend), runLabel+"-"+backend)
	}
	argos := []*framework.Argo{argoFor(t, "upstream", runLabel), argoFor(t, "ours", runLabel)}
	t.Cleanup(func() { removeRunObjects(t, argos[0].S3, runLabel) })
	yaml := fmt.Sprintf(benchBigWorkflow, b.cfg.bigMiB<<20)
	for i := range b.cfg.bigReps {
		for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
			t.Run(fmt.Sprintf("podspec/%s/%d", backend, i), func(t *testing.T) {
				tmpl := benchScript(envs[backend], "big", fmt.Sprintf("head -c %d /dev/urandom > /work/data.bin", b.cfg.bigMiB<<20))
				tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "data", Path: "/work/data.bin"}}
				s, err := b.oursStep(t, envs[backend], runLabel+"-"+backend, fmt.Sprintf("%s-%s-%d", runLabel, backend, i), tmpl, 5*time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				add("podspec/ours/"+backend, s)
			})
			for _, a := range argos {
				key := "argo/" + a.Controller.Name + "/" + backend
				t.Run(fmt.Sprintf("%s/%d", key, i), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					defer cancel()
					name := fmt.Sprintf("%s-%s-%s-%d", runLabel, a.Controller.Name, backend, i)
					f, err := measureStepWith(ctx, t, a, b.te, b.kc, backend, name, yaml, wantSucceeded)
					if err != nil {
						t.Fatal(err)
					}
					add(key, fromArgo(f))
				})
			}
		}
	}
}

// removeRunObjects deletes the S3 objects of one run of the big-artifact steps (keys that start
// with runLabel or bench/runLabel) from every bucket of the testbed's S3: Argo's artifact
// repositories keep them, BIG_MIB per step (18 GiB for a full make bench), and a testbed disk
// that fills makes the kubelet's image GC delete the pause image mid-run (make bench 2026-12-01
// 16:05 UTC, ephemeral-storage pressure with 34 GB of earlier runs' artifacts in S3).
func removeRunObjects(t *testing.T, s3 *minio.Client, runLabel string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	buckets, err := s3.ListBuckets(ctx)
	if err != nil {
		t.Logf("S3: list buckets to remove run %s's artifacts: %v", runLabel, err)
		return
	}
	n := 0
	for _, bk := range buckets {
		for _, prefix := range []string{runLabel, "bench/" + runLabel} {
			for o := range s3.ListObjects(ctx, bk.Name, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
				if o.Err != nil {
					t.Logf("S3: list %s/%s: %v", bk.Name, prefix, o.Err)
					break
				}
				if err := s3.RemoveObject(ctx, bk.Name, o.Key, minio.RemoveObjectOptions{}); err != nil {
					t.Logf("S3: remove %s/%s: %v", bk.Name, o.Key, err)
					continue
				}
				n++
			}
		}
	}
	t.Logf("S3: removed %d objects of run %s", n, runLabel)
}

// ---------------------------------------------------------------- figure 5, CopyFile

// copySeries is one backend and size: our CopyFile and the peer CLI, interleaved, with the CPU
// the API server, the kubelet and dockerd spent in each.
type copySeries struct {
	backend, peer                         string
	mib                                   int
	ours, theirs                          []time.Duration
	oursAPI, oursKubelet, oursDocker      []time.Duration
	theirsAPI, theirsKubelet, theirsDockr []time.Duration
}

func (b *bench) copySeries(backend, peer string, mib int) *copySeries {
	k := fmt.Sprintf("%s/%d", backend, mib)
	if b.copies[k] == nil {
		b.copies[k] = &copySeries{backend: backend, peer: peer, mib: mib}
	}
	return b.copies[k]
}

// copy measures CopyFile (compression off) of each COPY_MIB size out of a running container
// through k8sapi and kubelet against `kubectl cp`, and out of a stopped container on dockerd
// against `docker cp`, REPS times, each repetition running every backend and size in turn.
// Every timed copy starts settled (its earlier output removed, dirty pages synced); on dockerd,
// CopyFile and `docker cp` take turns at going first.
func (b *bench) copy(t *testing.T) {
	f := framework.New(t)
	token := kubeletToken(t, f, "argoexec-kubelet", kubeletRules(t))
	type target struct {
		pod        string
		k8s, kubel executor.ContainerRuntimeExecutor
		dockerPod  *dockerPod
		dockerExec executor.ContainerRuntimeExecutor
		size       int64
		mib        int
	}
	var targets []*target
	for _, mib := range b.cfg.copyMiB {
		size := int64(mib) << 20
		pod := k8sapiBigFilePod(t, f, fmt.Sprintf("copy-%d", mib), size)
		xk, err := k8sapi.New(k8sapi.Config{Kubeconfig: f.Env.Kubeconfig, Namespace: f.Namespace, PodName: pod.Name}, benchLog())
		if err != nil {
			t.Fatal(err)
		}
		xl, err := kubelet.New(kubeletConfig(f, pod.Name, token), benchLog())
		if err != nil {
			t.Fatal(err)
		}
		dp, dx := bigFilePod(t, size)
		targets = append(targets, &target{pod: pod.Name, k8s: xk, kubel: xl, dockerPod: dp, dockerExec: dx, size: size, mib: mib})
	}
	dockerCLI := dockerCLIPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for rep := range b.cfg.reps {
		for _, tg := range targets {
			for _, be := range []struct {
				name string
				x    executor.ContainerRuntimeExecutor
			}{{"k8sapi", tg.k8s}, {"kubelet", tg.kubel}} {
				r := copyVsKubectl(t, f, be.x, tg.pod, tg.size, 1, nil)
				s := b.copySeries(be.name, "kubectl cp", tg.mib)
				s.ours, s.theirs = append(s.ours, r.ours...), append(s.theirs, r.theirs...)
				s.oursAPI, s.oursKubelet = append(s.oursAPI, r.oursAPI...), append(s.oursKubelet, r.oursKubelet...)
				s.theirsAPI, s.theirsKubelet = append(s.theirsAPI, r.theirsAPI...), append(s.theirsKubelet, r.theirsKubelet...)
			}
			s := b.copySeries("docker", "docker cp", tg.mib)
			ours := func() {
				settle(filepath.Join(dir, "docker.tgz"))
				m, d0, start := startCPU(), daemonCPU("dockerd"), time.Now()
				if err := tg.dockerExec.CopyFile(ctx, "main", "/tmp/big.bin", filepath.Join(dir, "docker.tgz"), gzip.NoCompression); err != nil {
					t.Fatalf("docker CopyFile: %v", err)
				}
				s.ours = append(s.ours, time.Since(start))
				a, k := m.since()
				s.oursAPI, s.oursKubelet, s.oursDocker = append(s.oursAPI, a), append(s.oursKubelet, k), append(s.oursDocker, daemonCPU("dockerd")-d0)
			}
			theirs := func() {
				settle(filepath.Join(dir, "docker-cp.bin"))
				m, d0, start := startCPU(), daemonCPU("dockerd"), time.Now()
				cmd := exec.CommandContext(ctx, dockerCLI, "-H", "unix://"+tg.dockerPod.d.Sock, "cp", tg.dockerPod.ids["main"]+":/tmp/big.bin", filepath.Join(dir, "docker-cp.bin"))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("docker cp: %v\n%s", err, out)
				}
				s.theirs = append(s.theirs, time.Since(start))
				a, k := m.since()
				s.theirsAPI, s.theirsKubelet, s.theirsDockr = append(s.theirsAPI, a), append(s.theirsKubelet, k), append(s.theirsDockr, daemonCPU("dockerd")-d0)
			}
			if rep%2 == 0 { // each side goes first in half the repetitions
				ours()
				theirs()
			} else {
				theirs()
				ours()
			}
			if st, err := os.Stat(filepath.Join(dir, "docker-cp.bin")); err != nil || st.Size() != tg.size {
				t.Fatalf("docker cp wrote %v, %v", st, err)
			}
		}
	}
}

func benchLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// ---------------------------------------------------------------- figure 6, concurrency

// concRun is one concurrency run: n steps at once on one backend.
type concRun struct {
	backend                string
	n                      int
	wall                   time.Duration
	steps                  []time.Duration
	apiCPU, kubeletCPU     time.Duration
	artifactBytes, logByte int64
	failed                 int   // steps that returned an error (left out of the latencies)
	firstErr               error // the first of them
}

// concurrency starts max(CONCURRENCY) pods whose main wrote CONC_MIB of random data and a
// 20,000-line log, and then, for each backend and each n, runs n steps at once from this
// process, as n wait containers would: each its own backend client, CopyFile of the data
// (compression off) and the whole log of main. It measures the wall time, each step's
// latency, and the API server's and the kubelet's CPU.
func (b *bench) concurrency(t *testing.T) {
	f := framework.New(t)
	token := kubeletToken(t, f, "argoexec-kubelet", kubeletRules(t))
	n := 0
	for _, c := range b.cfg.conc {
		n = max(n, c)
	}
	size := int64(b.cfg.concMiB) << 20
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	pods := make([]string, n)
	for i := range n {
		pods[i] = fmt.Sprintf("conc-%02d", i)
		f.CreatePod(ctx, scriptPod(f, pods[i], []executortest.Container{{Name: "main",
			Script: fmt.Sprintf("head -c %d /dev/urandom > /data/big.bin && seq 1 20000 && touch /data/ready && sleep 3600", size)}}))
	}
	for _, p := range pods {
		if _, err := f.WaitForPod(ctx, p, startedAll); err != nil {
			t.Fatal(err)
		}
		x, err := k8sapi.New(k8sapi.Config{Kubeconfig: f.Env.Kubeconfig, Namespace: f.Namespace, PodName: p}, benchLog())
		if err != nil {
			t.Fatal(err)
		}
		for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
			if _, err := x.GetFileContents(ctx, "main", "/data/ready"); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod %s: main never wrote /data/ready", p)
			case <-time.After(delay):
			}
		}
	}
	dir := t.TempDir()
	for _, c := range b.cfg.conc {
		for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
			xs := make([]executor.ContainerRuntimeExecutor, c)
			for i := range c {
				var err error
				if backend == wf.ExecutorK8sAPI {
					xs[i], err = k8sapi.New(k8sapi.Config{Kubeconfig: f.Env.Kubeconfig, Namespace: f.Namespace, PodName: pods[i]}, benchLog())
				} else {
					xs[i], err = kubelet.New(kubeletConfig(f, pods[i], token), benchLog())
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			r := concRun{backend: backend, n: c, steps: make([]time.Duration, c)}
			errs := make([]error, c)
			logBytes := make([]int64, c)
			var wg sync.WaitGroup
			m, start := startCPU(), time.Now()
			for i := range c {
				wg.Go(func() {
					s := time.Now()
					dest := filepath.Join(dir, fmt.Sprintf("%s-%d.tgz", backend, i))
					defer os.Remove(dest)
					if err := xs[i].CopyFile(ctx, "main", "/data/big.bin", dest, gzip.NoCompression); err != nil {
						errs[i] = fmt.Errorf("%s: CopyFile: %w", pods[i], err)
						return
					}
					rc, err := xs[i].GetOutputStream(ctx, "main", false)
					if err != nil {
						errs[i] = fmt.Errorf("%s: log: %w", pods[i], err)
						return
					}
					logBytes[i], err = io.Copy(io.Discard, rc)
					rc.Close()
					if err != nil {
						errs[i] = fmt.Errorf("%s: reading the log: %w", pods[i], err)
						return
					}
					r.steps[i] = time.Since(s)
				})
			}
			wg.Wait()
			r.wall = time.Since(start)
			r.apiCPU, r.kubeletCPU = m.since()
			var ok []time.Duration
			for i, err := range errs {
				if err == nil && logBytes[i] < 100000 {
					err = fmt.Errorf("%s: log of %d bytes, want the 20,000 lines main printed", pods[i], logBytes[i])
				}
				if err != nil {
					if r.failed++; r.firstErr == nil {
						r.firstErr = err
					}
					continue
				}
				ok = append(ok, r.steps[i])
				r.logByte += logBytes[i]
			}
			if r.failed > 0 {
				t.Errorf("%d of %d concurrent steps on %s failed; the first: %v", r.failed, c, backend, r.firstErr)
			}
			r.steps = ok
			r.artifactBytes = size * int64(c-r.failed)
			b.conc = append(b.conc, r)
			t.Logf("%d concurrent steps on %s: wall %s, API server CPU %s, kubelet CPU %s, %d failed", c, backend, r.wall.Round(time.Millisecond), r.apiCPU, r.kubeletCPU, r.failed)
		}
	}
}

// ---------------------------------------------------------------- the report

// machineLine describes the testbed: cores, CPU, memory, kernel, Kubernetes and the commit.
func machineLine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := "?"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				mem = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	commit := "?"
	if out, err := exec.Command("git", "-C", repoRoot(), "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "-C", repoRoot(), "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
			commit += " (with uncommitted changes)"
		}
	}
	k8s := "?"
	if out, err := exec.Command(kubectlPathOr(), "--kubeconfig", framework.LoadEnv().Kubeconfig, "version", "-o", "json").Output(); err == nil {
		var v struct {
			Server struct{ GitVersion string } `json:"serverVersion"`
		}
		if json.Unmarshal(out, &v) == nil {
			k8s = v.Server.GitVersion
		}
	}
	images := fmt.Sprintf("our pod builder's executor image %s, Argo's controller's %s (ours) and %s (Argo's)",
		argoGetenv("ARGOEXEC_E2E_EXECUTOR_IMAGE", "argoexec:dev"), argoGetenv("ARGOEXEC_E2E_ARGO_IMAGE_OURS", "?"), argoGetenv("ARGOEXEC_E2E_ARGO_IMAGE_UPSTREAM", "?"))
	return fmt.Sprintf("%d cores (%s), %s RAM, Linux %s, Kubernetes %s, Go %s; commit %s; %s",
		runtime.NumCPU(), model, mem, strings.TrimSpace(string(kernel)), k8s, runtime.Version(), commit, images)
}

func kubectlPathOr() string {
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	return "/var/cache/argoexec/bin/kubectl"
}

// seriesName is the report's name of a series key.
func seriesName(key string) string {
	switch key {
	case "bare":
		return "bare pod (main alone)"
	case "podspec/ours/k8sapi", "podspec/ours/kubelet":
		return "ours, our pod builder, " + strings.TrimPrefix(key, "podspec/ours/")
	case "podspec/ours/k8sapi/sleep2", "podspec/ours/kubelet/sleep2":
		return "ours, our pod builder, " + strings.TrimSuffix(strings.TrimPrefix(key, "podspec/ours/"), "/sleep2") + ", main runs 2 s"
	}
	if rest, ok := strings.CutPrefix(key, "argo/upstream/"); ok {
		return "Argo's argoexec, Argo's controller, " + rest
	}
	if rest, ok := strings.CutPrefix(key, "argo/ours/"); ok {
		return "ours, Argo's controller, " + rest
	}
	return key
}

func seconds(ds []time.Duration) []float64 {
	var out []float64
	for _, d := range ds {
		if d >= 0 {
			out = append(out, d.Seconds())
		}
	}
	return out
}

func pick(ss []benchStep, f func(benchStep) time.Duration) []time.Duration {
	var out []time.Duration
	for _, s := range ss {
		out = append(out, f(s))
	}
	return out
}

func secs(s benchreport.Summary) string {
	if s.N == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f s (%.3f)", s.P50, s.P90)
}

func mibs(vs []int64) string {
	var xs []float64
	for _, v := range vs {
		if v > 0 {
			xs = append(xs, float64(v)/(1<<20))
		}
	}
	if len(xs) == 0 {
		return "—"
	}
	s := benchreport.Summarize(xs)
	return fmt.Sprintf("%.1f MiB (%.1f)", s.P50, s.Max)
}

func msecs(ds []time.Duration) string {
	var xs []float64
	for _, d := range ds {
		if d > 0 {
			xs = append(xs, float64(d.Microseconds())/1000)
		}
	}
	if len(xs) == 0 {
		return "—"
	}
	s := benchreport.Summarize(xs)
	return fmt.Sprintf("%.0f ms (%.0f)", s.P50, s.P90)
}

// report renders the generated block and its charts (file name -> SVG).
func (b *bench) report(t *testing.T) (string, map[string]string) {
	charts := map[string]string{}
	var w strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	chart := func(name, alt, svg string) {
		charts[name] = svg
		p("\n![%s](%s/%s)\n", alt, b.cfg.charts, name)
	}
	p("## make bench (generated)\n\n")
	if t.Failed() {
		p("**Some measurements of this run failed** (the test log of `make bench` says which): a series with fewer runs than the others lost them.\n\n")
	}
	p("One run of `%s` (`test/e2e/bench_test.go`, `TestBench`), %s UTC, %s; load average %s at the start, %s at the end; "+
		"the run took %s. Medians and p90 (nearest rank) of %d repetitions, interleaved (each repetition runs every series in turn); "+
		"the big-artifact step %d repetition(s). The sections after this block are hand-collected tables of earlier runs, kept as their record. Steps: the anchor's step (`echo hello; echo 42 > out`, an output parameter on an emptyDir); "+
		"\"our pod builder\" is the pod `pkg/podspec` builds, as our argoexec-step creates it; \"main runs 2 s\" is the same step after `sleep 2`, "+
		"so that wait's exec session into main is up before main exits (the anchor's main exits within milliseconds, before it can attach).\n\n",
		b.cfg.command, b.started.UTC().Format("2006-01-02 15:04"), machineLine(), b.loadStart, b.loadEnd, b.took.Round(time.Second), b.cfg.reps, b.cfg.bigReps)

	// figure 1 and 2
	p("### 1-2. Outputs reported after main exits; per-step overhead against a bare pod\n\n")
	p("*main exits* is containerd's `/tasks/exit` event for main; *reported* is the first watch event with the outputs annotation (our pod builder) " +
		"or the WorkflowTaskResult's ADDED (Argo's controller); *created* the pod's ADDED on a watch; *main started* containerd's `/tasks/start`; " +
		"*overhead* the median of created → Succeeded less the bare pod's.\n\n")
	tb := benchreport.Table{Header: []string{"series", "runs", "main exits → reported, p50 (p90)", "created → main started, p50 (p90)", "created → Succeeded, p50 (p90)", "overhead vs bare pod"}}
	bareDone := benchreport.Summarize(seconds(pick(b.series["bare"], func(s benchStep) time.Duration { return s.createdToDone })))
	var dist1, dist2 []benchreport.Series
	for _, k := range b.seriesOrder {
		ss := b.series[k]
		e2r := benchreport.Summarize(seconds(pick(ss, func(s benchStep) time.Duration { return s.exitToReported })))
		c2s := benchreport.Summarize(seconds(pick(ss, func(s benchStep) time.Duration { return s.createdToStarted })))
		c2d := benchreport.Summarize(seconds(pick(ss, func(s benchStep) time.Duration { return s.createdToDone })))
		over := "—"
		switch {
		case strings.HasSuffix(k, "/sleep2"):
			over = "(not comparable: main runs 2 s longer)"
		case k != "bare" && bareDone.N > 0:
			over = fmt.Sprintf("%+.2f s", c2d.P50-bareDone.P50)
		}
		tb.Add(seriesName(k), strconv.Itoa(len(ss)), secs(e2r), secs(c2s), secs(c2d), over)
		if k != "bare" {
			dist1 = append(dist1, benchreport.Series{Label: seriesName(k), Samples: seconds(pick(ss, func(s benchStep) time.Duration { return s.exitToReported }))})
		}
		dist2 = append(dist2, benchreport.Series{Label: seriesName(k), Samples: seconds(pick(ss, func(s benchStep) time.Duration { return s.createdToDone }))})
	}
	p("%s", tb.Markdown())
	chart("exit-to-reported.svg", "main exits to outputs reported, per series", benchreport.DistChart("main exits → outputs reported", "seconds (log scale)", dist1, true))
	chart("created-to-succeeded.svg", "pod created to Succeeded, per series", benchreport.DistChart("pod created → Succeeded", "seconds", dist2, false))

	// figure 3
	p("\n### 3. Peak RSS and CPU of wait and init\n\n")
	p("VmHWM of the container's `argoexec` and the container's `cpuacct.usage`, sampled every 10 ms from its cgroup while it runs (cgroup v1); "+
		"median (max) for memory, median (p90) for CPU. *small*: the anchor's step above; *big*: main writes %d MiB of random data to an emptyDir, "+
		"an output artifact that wait archives (gzip default level) and uploads to S3 (versitygw on the host).\n\n", b.cfg.bigMiB)
	tb = benchreport.Table{Header: []string{"series", "step", "runs", "wait peak RSS", "wait CPU", "init peak RSS", "init CPU"}}
	for _, set := range []struct {
		name  string
		order []string
		m     map[string][]benchStep
	}{{"small", b.seriesOrder, b.series}, {fmt.Sprintf("big, %d MiB", b.cfg.bigMiB), b.bigOrd, b.big}} {
		for _, k := range set.order {
			if k == "bare" {
				continue
			}
			ss := set.m[k]
			var wh, ih []int64
			for _, s := range ss {
				wh, ih = append(wh, s.waitHWM), append(ih, s.initHWM)
			}
			tb.Add(seriesName(k), set.name, strconv.Itoa(len(ss)), mibs(wh), msecs(pick(ss, func(s benchStep) time.Duration { return s.waitCPU })),
				mibs(ih), msecs(pick(ss, func(s benchStep) time.Duration { return s.initCPU })))
		}
	}
	p("%s", tb.Markdown())
	var rss []benchreport.Series
	for _, k := range b.seriesOrder {
		if k == "bare" {
			continue
		}
		var xs []float64
		for _, s := range b.series[k] {
			if s.waitHWM > 0 {
				xs = append(xs, float64(s.waitHWM)/(1<<20))
			}
		}
		rss = append(rss, benchreport.Series{Label: seriesName(k), Samples: xs})
	}
	chart("wait-peak-rss.svg", "wait's peak RSS per series, small step", benchreport.DistChart("wait's peak RSS (VmHWM), small step", "MiB", rss, false))

	// figure 4
	p("\n### 4. API requests per step by the executor\n\n")
	p("From the API server's audit log (`hack/cluster.sh`: Metadata level for the service accounts of Argo's namespaces), counted by the pod name " +
		"in the bound service-account token (init and wait; main makes none): exact, every run. Our pod builder's steps run in `argo-ours` for this, as a " +
		"service account of their own with manifests/base's RBAC (pods without the workflow label, which Argo's controller there ignores). Kubelet requests: deltas of the kubelet's `kubelet_http_requests_total` during the step, " +
		"the fewest seen in a run (the counters count every client).\n\n")
	tb = benchreport.Table{Header: []string{"series", "API requests per step, median (min-max)", "which (median per step)", "kubelet requests per step, fewest in a run"}}
	for _, k := range b.seriesOrder {
		ss := b.series[k]
		if k == "bare" {
			continue
		}
		var total []float64
		kinds := map[string][]int{}
		kub := map[string][]int{}
		for _, s := range ss {
			if s.requests >= 0 {
				total = append(total, float64(s.requests))
			}
			for kk, v := range s.requestKinds {
				kinds[kk] = append(kinds[kk], v)
			}
			for kk, v := range s.kubelet {
				kub[kk] = append(kub[kk], v)
			}
		}
		fewestInEveryRun(kub, len(ss))
		req, which := "not audited", "—"
		if len(total) > 0 {
			s := benchreport.Summarize(total)
			req, which = fmt.Sprintf("%.0f (%.0f-%.0f)", s.P50, s.Min, s.Max), countsSummary(-1, kinds)
		}
		tb.Add(seriesName(k), req, which, countsSummary(-1, kub))
	}
	p("%s", tb.Markdown())

	// figure 5
	p("\n### 5. CopyFile against `kubectl cp` and `docker cp`\n\n")
	p("CopyFile (compression off) of a file of random data: k8sapi and kubelet out of a running container's emptyDir, against `kubectl cp` of the " +
		"same file; docker out of a stopped container on dockerd, against `docker cp`. Each repetition runs ours, then the peer. CPU: the daemons' " +
		"user+system seconds (`/proc/PID/stat`) during each copy, medians.\n\n")
	tb = benchreport.Table{Header: []string{"backend", "size", "runs", "ours, p50 (p90)", "peer, p50 (p90)", "peer / ours", "API server CPU, ours vs peer", "kubelet CPU, ours vs peer", "dockerd CPU, ours vs peer"}}
	for _, be := range []string{"k8sapi", "kubelet", "docker"} {
		for _, mib := range b.cfg.copyMiB {
			s := b.copies[fmt.Sprintf("%s/%d", be, mib)]
			if s == nil {
				continue
			}
			o, th := benchreport.Summarize(seconds(s.ours)), benchreport.Summarize(seconds(s.theirs))
			cpu := func(a, c []time.Duration) string {
				if len(a) == 0 {
					return "—"
				}
				return fmt.Sprintf("%.2f s vs %.2f s", median(a).Seconds(), median(c).Seconds())
			}
			tb.Add(be, fmt.Sprintf("%d MiB", mib), strconv.Itoa(len(s.ours)), secs(o), fmt.Sprintf("`%s` %s", s.peer, secs(th)),
				fmt.Sprintf("**%.2fx**", th.P50/o.P50), cpu(s.oursAPI, s.theirsAPI), cpu(s.oursKubelet, s.theirsKubelet), cpu(s.oursDocker, s.theirsDockr))
		}
	}
	p("%s", tb.Markdown())

	// figure 6
	p("\n### 6. Concurrent steps on the node\n\n")
	p("%d pods whose main wrote %d MiB of random data and a 20,000-line log (%s) to an emptyDir; then, per backend and concurrency n, n steps at "+
		"once from the harness, as n wait containers would run them: each its own backend client (k8sapi as the admin, kubelet with a "+
		"service-account token), CopyFile of the data (compression off) and the whole log of main. The pods' own start and exit are not in these "+
		"figures (figures 1-2 have them): this is the executor's data path under load, the trade-off between the backends.\n\n",
		maxInt(b.cfg.conc), b.cfg.concMiB, "`seq 1 20000`")
	tb = benchreport.Table{Header: []string{"backend", "n", "failed", "wall", "step latency p50 (p90)", "API server CPU (per step)", "kubelet CPU (per step)", "bytes through the API server per step"}}
	var apiLines, latLines []benchreport.Line
	for _, be := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
		al, ll := benchreport.Line{Label: be + " API server"}, benchreport.Line{Label: be + " step p50"}
		kl := benchreport.Line{Label: be + " kubelet"}
		for _, r := range b.conc {
			if r.backend != be {
				continue
			}
			st := benchreport.Summarize(seconds(r.steps))
			through := "0 (artifact and log go to the kubelet)"
			if be == wf.ExecutorK8sAPI {
				through = fmt.Sprintf("%.1f MiB (artifact and log, proxied)", float64(r.artifactBytes+r.logByte)/float64(max(r.n-r.failed, 1))/(1<<20))
			}
			failed := "0"
			if r.failed > 0 {
				failed = fmt.Sprintf("**%d** (%v)", r.failed, r.firstErr)
			}
			tb.Add(be, strconv.Itoa(r.n), failed, fmt.Sprintf("%.2f s", r.wall.Seconds()), secs(st),
				fmt.Sprintf("%.2f s (%.3f s)", r.apiCPU.Seconds(), r.apiCPU.Seconds()/float64(r.n)),
				fmt.Sprintf("%.2f s (%.3f s)", r.kubeletCPU.Seconds(), r.kubeletCPU.Seconds()/float64(r.n)), through)
			al.X, al.Y = append(al.X, float64(r.n)), append(al.Y, r.apiCPU.Seconds())
			kl.X, kl.Y = append(kl.X, float64(r.n)), append(kl.Y, r.kubeletCPU.Seconds())
			ll.X, ll.Y = append(ll.X, float64(r.n)), append(ll.Y, st.P50)
		}
		apiLines = append(apiLines, al, kl)
		latLines = append(latLines, ll)
	}
	p("%s", tb.Markdown())
	chart("concurrency-cpu.svg", "API server and kubelet CPU against concurrent steps", benchreport.LineChart("CPU seconds of the daemons, n concurrent steps", "concurrent steps", "CPU seconds", apiLines))
	chart("concurrency-latency.svg", "step latency against concurrent steps", benchreport.LineChart("step latency p50, n concurrent steps", "concurrent steps", "seconds", latLines))

	// figure 7
	p("\n### 7. Scale model: 110 pods per node × 5,000 nodes\n\n")
	perStep := map[string]concRun{}
	for _, r := range b.conc {
		if r.n == maxInt(b.cfg.conc) {
			perStep[r.backend] = r
		}
	}
	const pods, stepSeconds = 110 * 5000, 60.0
	rate := pods / stepSeconds
	p("Inputs: the per-step API-server CPU and bytes of figure 6 at n = %d (a step that copies an artifact of %d MiB and reads its log through the "+
		"backend), and the assumption that every one of the 550,000 pod slots runs one such step a minute: %.0f steps/s. "+
		"API-server cores = steps/s × CPU-s per step; bytes/s = steps/s × bytes per step. The API server's own per-pod costs (create, "+
		"status updates, the controller's watch) are the same for every backend and not in these figures.\n\n", maxInt(b.cfg.conc), b.cfg.concMiB, rate)
	tb = benchreport.Table{Header: []string{"backend", "API-server CPU-s per step", "API-server cores for 550,000 pods", "bytes per step through the API server", "API-server bytes/s"}}
	for _, be := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
		r, ok := perStep[be]
		if !ok {
			continue
		}
		cpu := r.apiCPU.Seconds() / float64(r.n)
		var bytes float64
		if be == wf.ExecutorK8sAPI {
			bytes = float64(r.artifactBytes+r.logByte) / float64(max(r.n-r.failed, 1))
		}
		tb.Add(be, fmt.Sprintf("%.4f", cpu), fmt.Sprintf("%.0f", cpu*rate), fmt.Sprintf("%.1f MiB", bytes/(1<<20)), fmt.Sprintf("%.1f GiB/s", bytes*rate/(1<<30)))
	}
	p("%s", tb.Markdown())

	// goals
	p("\n### Goals (issue 13)\n\n")
	tb = benchreport.Table{Header: []string{"goal", "measured", "met"}}
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	for _, k := range []string{"podspec/ours/k8sapi", "podspec/ours/kubelet", "podspec/ours/k8sapi/sleep2", "podspec/ours/kubelet/sleep2", "argo/ours/k8sapi", "argo/ours/kubelet"} {
		ss := b.series[k]
		if len(ss) == 0 {
			continue
		}
		s := benchreport.Summarize(seconds(pick(ss, func(s benchStep) time.Duration { return s.exitToReported })))
		tb.Add("main exits → outputs reported p50 ≤ 50 ms, "+seriesName(k), fmt.Sprintf("%.0f ms", s.P50*1000), yes(s.P50 <= 0.050))
	}
	for _, k := range []string{"podspec/ours/k8sapi", "podspec/ours/kubelet"} {
		ss := b.series[k]
		if len(ss) == 0 || bareDone.N == 0 {
			continue
		}
		s := benchreport.Summarize(seconds(pick(ss, func(s benchStep) time.Duration { return s.createdToDone })))
		tb.Add("overhead against a bare pod ≤ +0.3 s, "+seriesName(k), fmt.Sprintf("%+.2f s", s.P50-bareDone.P50), yes(s.P50-bareDone.P50 <= 0.3))
	}
	for _, g := range []struct {
		k   string
		max float64
	}{{"podspec/ours/k8sapi", 3}, {"podspec/ours/kubelet", 1}, {"argo/ours/k8sapi", 3}, {"argo/ours/kubelet", 1}} {
		var total []float64
		for _, s := range b.series[g.k] {
			if s.requests >= 0 {
				total = append(total, float64(s.requests))
			}
		}
		if len(total) == 0 {
			continue
		}
		s := benchreport.Summarize(total)
		tb.Add(fmt.Sprintf("API requests per step ≤ %.0f, %s", g.max, seriesName(g.k)), fmt.Sprintf("%.0f", s.P50), yes(s.P50 <= g.max))
	}
	if k, l := perStep[wf.ExecutorK8sAPI], perStep[wf.ExecutorKubelet]; k.n > 0 && l.n > 0 {
		ratio := l.apiCPU.Seconds() / k.apiCPU.Seconds()
		tb.Add(fmt.Sprintf("API-server CPU per step on kubelet ≤ ¼ of k8sapi's (n = %d)", k.n), fmt.Sprintf("%.2f of it", ratio), yes(ratio <= 0.25))
	}
	p("%s", tb.Markdown())
	return w.String(), charts
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
