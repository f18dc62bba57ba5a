package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/argoexec/argoexec/executor/backends"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

const examples = "../../../examples"

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// captured runs the command tree with runners that record the options.
func captured(t *testing.T, args []string) (*RenderOptions, *RunOptions, error) {
	t.Helper()
	var ro *RenderOptions
	var rn *RunOptions
	var stderr bytes.Buffer
	err := run(context.Background(), args, IO{Out: &bytes.Buffer{}, Err: &stderr}, runners{
		render: func(_ context.Context, o *RenderOptions, _ IO, _ *logrus.Entry) error { ro = o; return nil },
		run:    func(_ context.Context, o *RunOptions, _ IO, _ *logrus.Entry) error { rn = o; return nil },
	})
	return ro, rn, err
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, ro *RenderOptions, rn *RunOptions)
		wantErr string
	}{
		{name: "render with labels and params",
			args: []string{"render", "--template", "t.yaml", "--configmap", "c.yaml", "--label", "a=b", "--label", "c=", "-p", "x=1=2", "--name", "n", "--namespace", "ns", "--service-account", "sa"},
			check: func(t *testing.T, ro *RenderOptions, _ *RunOptions) {
				if !cmp.Equal(ro.labels, map[string]string{"a": "b", "c": ""}) || !cmp.Equal(ro.params, map[string]string{"x": "1=2"}) {
					t.Errorf("labels %v params %v", ro.labels, ro.params)
				}
				if ro.Name != "n" || ro.Namespace != "ns" || ro.ServiceAccount != "sa" || ro.TemplateFile != "t.yaml" || ro.ConfigMapFile != "c.yaml" {
					t.Errorf("options = %+v", ro)
				}
			}},
		{name: "render defaults", args: []string{"render", "--template", "t", "--configmap", "c"},
			check: func(t *testing.T, ro *RenderOptions, _ *RunOptions) {
				if ro.ServiceAccount != "argoexec" || ro.Name != "" || len(ro.labels) != 0 {
					t.Errorf("options = %+v", ro)
				}
			}},
		{name: "run defaults", args: []string{"run", "--template", "t", "--configmap", "c"},
			check: func(t *testing.T, _ *RenderOptions, rn *RunOptions) {
				if rn.Timeout != 5*time.Minute || rn.Delete || rn.LogTail != 20 || rn.Kubeconfig != "" || rn.NewClient == nil {
					t.Errorf("options = %+v", rn)
				}
			}},
		{name: "run flags", args: []string{"run", "--template", "t", "--configmap", "c", "--kubeconfig", "k", "--timeout", "90s", "--rm", "--log-tail", "5", "--label", "x=y"},
			check: func(t *testing.T, _ *RenderOptions, rn *RunOptions) {
				if rn.Timeout != 90*time.Second || !rn.Delete || rn.LogTail != 5 || rn.Kubeconfig != "k" || rn.Render.labels["x"] != "y" {
					t.Errorf("options = %+v", rn)
				}
			}},
		{name: "missing template", args: []string{"render", "--configmap", "c"}, wantErr: "--template is required"},
		{name: "missing configmap", args: []string{"run", "--template", "t"}, wantErr: "--configmap is required"},
		{name: "bad label", args: []string{"render", "--template", "t", "--configmap", "c", "--label", "nolabel"}, wantErr: `--label "nolabel": want key=value`},
		{name: "bad param", args: []string{"render", "--template", "t", "--configmap", "c", "-p", "=v"}, wantErr: `--param "=v"`},
		{name: "bad timeout", args: []string{"run", "--template", "t", "--configmap", "c", "--timeout", "0s"}, wantErr: "--timeout 0s: must be positive"},
		{name: "unknown flag", args: []string{"render", "--tempalte", "t"}, wantErr: "unknown flag: --tempalte"},
		{name: "bad log level", args: []string{"render", "--loglevel", "loud", "--template", "t", "--configmap", "c"}, wantErr: "--loglevel"},
		{name: "positional argument", args: []string{"render", "extra"}, wantErr: "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro, rn, err := captured(t, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ExitCode(err) != ExitUsage {
					t.Fatalf("error = %v (exit %d), want usage error containing %q", err, ExitCode(err), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, ro, rn)
		})
	}
}

// TestRenderEachBackend renders the examples for every backend and decodes
// the output strictly into a corev1.Pod.
func TestRenderEachBackend(t *testing.T) {
	for _, backend := range backends.All().Names() {
		cm := writeFile(t, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: workflow-controller-configmap}\ndata:\n  config: |\n    containerRuntimeExecutor: "+backend+
			"\n    artifactRepository:\n      s3: {endpoint: 's3:7070', bucket: b, accessKeySecret: {name: s, key: a}, secretKeySecret: {name: s, key: k}}\n")
		for _, ex := range []string{"script-result.yaml", "output-parameter.yaml", "artifact-produce.yaml", "artifact-consume.yaml", "sidecar-ignores-term.yaml"} {
			t.Run(backend+"/"+ex, func(t *testing.T) {
				var out, stderr bytes.Buffer
				err := Run(context.Background(), []string{"render", "--template", filepath.Join(examples, ex), "--configmap", cm, "--namespace", "argo"}, IO{Out: &out, Err: &stderr})
				if err != nil {
					t.Fatalf("render: %v\n%s", err, stderr.String())
				}
				var pod corev1.Pod
				if err := workflow.DecodeStrict(out.Bytes(), &pod); err != nil {
					t.Fatalf("rendered pod does not decode strictly: %v", err)
				}
				if pod.Name != strings.TrimSuffix(ex, ".yaml") || pod.Namespace != "argo" || executorOf(&pod) != backend || pod.Spec.ServiceAccountName != "argoexec" {
					t.Errorf("pod %s/%s executor %s sa %s", pod.Namespace, pod.Name, executorOf(&pod), pod.Spec.ServiceAccountName)
				}
			})
		}
	}
}

func TestRenderErrors(t *testing.T) {
	cm := writeFile(t, "cm.yaml", "containerRuntimeExecutor: kubelet\n")
	for _, tc := range []struct {
		name     string
		template string
		extra    []string
		want     string
	}{
		{"unknown template field", "name: x\ncontainer: {image: a, comand: [x]}\n", nil, `unknown field "container.comand"`},
		{"unreachable output", "name: x\ncontainer: {image: a}\noutputs: {parameters: [{name: p, valueFrom: {path: /tmp/p}}]}\n", nil, "use the docker or emissary executor"},
		{"unknown param", "name: x\ncontainer: {image: a}\n", []string{"-p", "nope=1"}, `no input parameter "nope"`},
		{"no name", "container: {image: a}\n", nil, "set --name"},
		{"bad label value", "name: x\ncontainer: {image: a}\n", []string{"--label", workflow.LabelContainerRuntimeExecutor + "=pns"}, `executor "pns" is Argo's, not implemented by argoexec`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := writeFile(t, "t.yaml", tc.template)
			var out, stderr bytes.Buffer
			err := Run(context.Background(), append([]string{"render", "--template", tmpl, "--configmap", cm}, tc.extra...), IO{Out: &out, Err: &stderr})
			if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != ExitUsage {
				t.Fatalf("error = %v (exit %d), want usage error containing %q", err, ExitCode(err), tc.want)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, cm, want string }{
		{"bad value", "kubeletPort: 70000\n", "kubeletPort: 70000 is not a port"},
		{"quoted port, config key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: workflow-controller-configmap, namespace: argo}\ndata:\n  config: |\n    kubeletPort: \"10250\"\n",
			`ConfigMap argo/workflow-controller-configmap key config: parse config: kubeletPort: "10250" is a string; want a whole number: write kubeletPort: 10250, without quotes`},
		{"quoted port, Argo's per-key layout", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: workflow-controller-configmap, namespace: argo}\ndata:\n  kubeletPort: '\"10250\"'\n",
			`ConfigMap argo/workflow-controller-configmap (per-key layout): parse config: kubeletPort: "10250" is a string; want a whole number`},
		{"empty executor image", "executor: {image: \"\"}\n", "executor.image: empty"},
	} {
		t.Run("ConfigMap "+tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := Run(context.Background(), []string{"render", "--template", filepath.Join(examples, "script-result.yaml"), "--configmap", writeFile(t, "bad.yaml", tc.cm)}, IO{Out: &bytes.Buffer{}, Err: &stderr})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("bad ConfigMap: error = %v, stderr %q; want both to contain %q", err, stderr.String(), tc.want)
			}
		})
	}
}

// finishOnCreate makes the fake API server store created pods as already
// finished in phase, with the given outputs annotation.
func finishOnCreate(client *fake.Clientset, phase corev1.PodPhase, outputs string) {
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Status.Phase = phase
		if outputs != "" {
			pod.Annotations[workflow.AnnotationOutputs] = outputs
		}
		switch phase {
		case corev1.PodFailed:
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}}}
		case corev1.PodSucceeded:
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
		}
		return false, nil, nil
	})
}

func runWithFake(t *testing.T, client *fake.Clientset, extra ...string) (string, error) {
	t.Helper()
	return runWithFakeConfig(t, client, "", extra...)
}

func runWithFakeConfig(t *testing.T, client *fake.Clientset, configMap string, extra ...string) (string, error) {
	t.Helper()
	cm := writeFile(t, "cm.yaml", configMap)
	o := &RunOptions{
		Render:    RenderOptions{TemplateFile: filepath.Join(examples, "output-parameter.yaml"), ConfigMapFile: cm, ServiceAccount: "argoexec"},
		Timeout:   time.Minute,
		LogTail:   20,
		NewClient: func(string) (kubernetes.Interface, string, error) { return client, "ns1", nil },
	}
	for i := 0; i+1 < len(extra); i += 2 {
		switch extra[i] {
		case "timeout":
			o.Timeout, _ = time.ParseDuration(extra[i+1])
		case "name":
			o.Render.Name = extra[i+1]
		case "rm":
			o.Delete = true
		}
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := o.Run(context.Background(), &out, logrus.NewEntry(logrus.New()))
	return out.String(), err
}

func TestRunSucceeded(t *testing.T) {
	client := fake.NewClientset()
	result := "42\n"
	outputs, _ := json.Marshal(workflow.NodeOutputs{
		Parameters: []workflow.Parameter{{Name: "answer", Value: workflow.AnyStringPtr("42")}, {Name: "missing-with-default", Value: workflow.AnyStringPtr("none")}},
		Artifacts:  []workflow.Artifact{{Name: "data", S3: &workflow.S3Artifact{S3Bucket: workflow.S3Bucket{Bucket: "b"}, Key: "wf/pod/data.tgz"}}},
		Result:     &result,
	})
	finishOnCreate(client, corev1.PodSucceeded, string(outputs))
	out, err := runWithFake(t, client, "rm", "")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"(executor k8sapi): Succeeded",
		"parameter  answer                42",
		"parameter  missing-with-default  none",
		"artifact   data                  s3://b/wf/pod/data.tgz",
		"result                           42",
		"exitCode                         0 (main's status)",
		"created -> finished",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "log (last") {
		t.Errorf("log tail printed for a pod that succeeded:\n%s", out)
	}
	pods, _ := client.CoreV1().Pods("ns1").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("--rm left %d pods", len(pods.Items))
	}
}

// TestRunEmissaryImageVolume: with emissaryImageVolume auto, run mounts the
// executor image into main and builds no init when every node can mount
// image volumes, and copies the wrapper from init when one cannot (or the
// nodes cannot be listed), saying which and why.
func TestRunEmissaryImageVolume(t *testing.T) {
	node := func(name, runtime string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", ContainerRuntimeVersion: runtime}}}
	}
	for _, tc := range []struct {
		name      string
		nodes     []runtime.Object
		config    string
		wantImage bool
		wantLog   string
	}{
		{"containerd 2.2", []runtime.Object{node("a", "containerd://v2.2.9")}, "", true, "all 1 nodes run kubelet >= 1.35.0"},
		{"one node on containerd 1.6", []runtime.Object{node("a", "containerd://v2.2.9"), node("b", "containerd://1.6.20~ds1")}, "", false, "node b runs containerd://1.6.20~ds1"},
		{"never", []runtime.Object{node("a", "containerd://v2.2.9")}, "emissaryImageVolume: never\n", false, "init copies the wrapper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.nodes...)
			finishOnCreate(client, corev1.PodSucceeded, "{}")
			var created *corev1.Pod
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				created = a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
				return false, nil, nil
			})
			log, hook := logtest.NewNullLogger()
			o := &RunOptions{
				Render:    RenderOptions{TemplateFile: filepath.Join(examples, "output-parameter.yaml"), ConfigMapFile: writeFile(t, "cm.yaml", "containerRuntimeExecutor: emissary\n"+tc.config), ServiceAccount: "argoexec"},
				Timeout:   time.Minute,
				NewClient: func(string) (kubernetes.Interface, string, error) { return client, "ns1", nil },
			}
			if err := o.Complete(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := o.Run(context.Background(), &out, logrus.NewEntry(log)); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			if created == nil {
				t.Fatal("no pod created")
			}
			hasInit := slices.ContainsFunc(created.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == workflow.InitContainerName })
			hasVolume := slices.ContainsFunc(created.Spec.Volumes, func(v corev1.Volume) bool { return v.Image != nil })
			if hasVolume != tc.wantImage || hasInit == tc.wantImage {
				t.Errorf("image volume %v, init %v; want image volume %v and init %v", hasVolume, hasInit, tc.wantImage, !tc.wantImage)
			}
			var logged strings.Builder
			for _, e := range hook.AllEntries() {
				logged.WriteString(e.Message + " " + fmt.Sprint(e.Data["why"]) + "\n")
			}
			if !strings.Contains(logged.String(), tc.wantLog) {
				t.Errorf("log does not say %q:\n%s", tc.wantLog, logged.String())
			}
		})
	}
}

func TestRunFailed(t *testing.T) {
	client := fake.NewClientset()
	finishOnCreate(client, corev1.PodFailed, "")
	out, err := runWithFake(t, client, "name", "step-1")
	var failed *PodFailedError
	if !errors.As(err, &failed) || ExitCode(err) != ExitFailed || !strings.Contains(err.Error(), "ns1/step-1 failed: main exited 3 (Error)") {
		t.Fatalf("error = %v (exit %d), want PodFailedError naming main's exit", err, ExitCode(err))
	}
	for _, want := range []string{"step-1 (executor k8sapi): Failed", "outputs: none reported", "--- main log (last 20 lines) ---", "fake logs", "--- wait log"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := client.CoreV1().Pods("ns1").Get(context.Background(), "step-1", metav1.GetOptions{}); err != nil {
		t.Errorf("pod not kept without --rm: %v", err)
	}
}

// TestRunFailedContainer: `run` names the container that failed (init,
// main, wait or a sidecar) with how it ended, its termination message and
// its log, and says of containers that never started that they did not,
// instead of printing their empty logs.
func TestRunFailedContainer(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	terminated := func(code int32, reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg}}
	}
	initializing := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	tests := []struct {
		name         string
		initStatuses []corev1.ContainerStatus
		statuses     []corev1.ContainerStatus
		wantErr      string
		want         []string
		wantNot      []string
	}{
		{name: "init refused an input",
			initStatuses: []corev1.ContainerStatus{{Name: "init", State: terminated(1, "Error", "input artifact \"in\": entry out/root links to / outside the artifact\nmore")}},
			statuses:     []corev1.ContainerStatus{{Name: "main", State: initializing}, {Name: "wait", State: initializing}},
			wantErr:      `failed: init exited 1 (Error): input artifact "in": entry out/root links to / outside the artifact`,
			want: []string{"--- init (init container) failed: exited 1 (Error) ---", "message:\n  input artifact \"in\": entry out/root links to / outside the artifact\n  more",
				"--- init log (last 20 lines) ---", "--- main: never started (PodInitializing): no log ---", "--- wait: never started (PodInitializing): no log ---"},
			wantNot: []string{"--- main log", "--- wait log"}},
		{name: "wait failed to report",
			statuses: []corev1.ContainerStatus{{Name: "main", State: terminated(0, "Completed", "")}, {Name: "wait", State: terminated(1, "Error", "report outputs: over budget")}},
			wantErr:  "failed: wait exited 1 (Error): report outputs: over budget",
			want:     []string{"--- wait (wait) failed: exited 1 (Error) ---", "  report outputs: over budget", "--- wait log", "--- main log"}},
		{name: "a sidecar's image cannot be pulled",
			initStatuses: []corev1.ContainerStatus{{Name: "db", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "pull access denied"}}}},
			statuses:     []corev1.ContainerStatus{{Name: "main", State: initializing}, {Name: "wait", State: initializing}},
			wantErr:      "failed: db never started (ErrImagePull): pull access denied",
			want:         []string{"--- db (sidecar) failed: never started (ErrImagePull) ---", "  pull access denied"},
			wantNot:      []string{"--- db log"}},
		{name: "a sidecar stopped at the end is no failure",
			initStatuses: []corev1.ContainerStatus{{Name: "db", State: terminated(137, "Error", "")}},
			statuses:     []corev1.ContainerStatus{{Name: "main", State: terminated(2, "Error", "")}, {Name: "wait", State: terminated(0, "Completed", "")}},
			wantErr:      "failed: main exited 2 (Error)",
			want:         []string{"--- main (main) failed"},
			wantNot:      []string{"db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "db", RestartPolicy: &always})
				pod.Status.Phase = corev1.PodFailed
				pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses = tt.initStatuses, tt.statuses
				return false, nil, nil
			})
			out, err := runWithFake(t, client, "name", "step-1")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestRunTimeout(t *testing.T) {
	client := fake.NewClientset()
	out, err := runWithFake(t, client, "timeout", "200ms")
	var timeout *TimeoutError
	if !errors.As(err, &timeout) || ExitCode(err) != ExitTimeout || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatalf("error = %v (exit %d), want TimeoutError", err, ExitCode(err))
	}
	if !strings.Contains(out, "(no phase yet)") {
		t.Errorf("output:\n%s", out)
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cm := writeFile(t, "cm.yaml", "")
	o := &RunOptions{
		Render:    RenderOptions{TemplateFile: filepath.Join(examples, "script-result.yaml"), ConfigMapFile: cm},
		Timeout:   time.Minute,
		NewClient: func(string) (kubernetes.Interface, string, error) { return fake.NewClientset(), "ns1", nil },
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	err := o.Run(ctx, &bytes.Buffer{}, logrus.NewEntry(logrus.New()))
	if ExitCode(err) != ExitInterrupted {
		t.Errorf("error = %v (exit %d), want interrupted", err, ExitCode(err))
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("x"), ExitFailed},
		{usageErrorf("bad"), ExitUsage},
		{&PodFailedError{Pod: "p"}, ExitFailed},
		{&TimeoutError{Pod: "p"}, ExitTimeout},
		{context.Canceled, ExitInterrupted},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestRunWatchesPhases feeds the watch Pending -> Running -> Succeeded and
// checks the phases are followed and timed with the injected clock.
func TestRunWatchesPhases(t *testing.T) {
	client := fake.NewClientset()
	fw := watch.NewFake()
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		go func() {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "phases", Namespace: "ns1"}}
			for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodRunning, corev1.PodSucceeded} {
				p := pod.DeepCopy()
				p.Status.Phase = phase
				fw.Modify(p)
			}
		}()
		return true, fw, nil
	})
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cm := writeFile(t, "cm.yaml", "")
	o := &RunOptions{
		Render:    RenderOptions{TemplateFile: filepath.Join(examples, "output-parameter.yaml"), ConfigMapFile: cm, Name: "phases"},
		Timeout:   time.Minute,
		NewClient: func(string) (kubernetes.Interface, string, error) { return client, "ns1", nil },
		Now:       func() time.Time { clock = clock.Add(time.Second); return clock },
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := o.Run(context.Background(), &out, logrus.NewEntry(logrus.New())); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	// Clock ticks: created 1s; Get (Pending) 2s; Pending 3s; Running 4s; Running 5s; Succeeded 6s.
	for _, want := range []string{"Succeeded", "created -> running   3s", "running -> finished  2s", "created -> finished  5s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
