//go:build e2e

package e2e

// The e2e cases of issue 12's defects, each tried as a new user would: the
// testbed's pod network (item 0), a script that prints 10 MiB (1), a
// parameter that is not UTF-8 (2), an init container that refuses its input
// (3) and a ConfigMap value of the wrong kind (4). Defect 5 is asserted in
// TestWorkflow's NativeSidecarIgnoringTERM. Run them with
// `hack/e2e.sh -run TestDefect`.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/cmd/argoexec-step/app"
	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/kubelet"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// bridgeMAC is the address hack/cluster.sh gives the pod bridge cni0.
const bridgeMAC = "02:42:0a:58:00:01"

// netAddrSet is /sys/class/net/*/addr_assign_type for an address set by
// the user (NET_ADDR_SET): the bridge then no longer takes the lowest MAC
// among its ports.
const netAddrSet = "3"

// TestDefectPodToHostAfterTeardown (item 0): deleting one pod tears down
// its sandbox's veth on cni0, and another pod still reaches the host at
// once. The mechanism: cni0's MAC is the one the testbed set (an address
// set by the user, not the lowest of its ports) and stays the same across
// the teardown, so the survivor's neighbour entry for the gateway is still
// right; its TCP connect to S3 on the host succeeds within nc's 1 s timeout.
// Without the fixed MAC the bridge's address follows its ports and the
// survivor sends to a MAC that is gone until it re-ARPs (10-80 s seen).
func TestDefectPodToHostAfterTeardown(t *testing.T) {
	f := framework.New(t)
	ctx := f.Context()
	host := f.Env.KubeletHost
	s3Port := "7070"
	if i := strings.LastIndex(f.Env.S3Endpoint, ":"); i >= 0 {
		s3Port = f.Env.S3Endpoint[i+1:]
	}
	for _, name := range []string{"survivor", "victim"} {
		f.CreatePod(ctx, f.SimplePod(name, "sleep 3600"))
	}
	for _, name := range []string{"survivor", "victim"} {
		if _, err := f.WaitForPodPhase(ctx, name, corev1.PodRunning); err != nil {
			t.Fatal(err)
		}
	}
	connect := "nc -w 1 " + host + " " + s3Port + " </dev/null && echo connected; grep '^" + host + " ' /proc/net/arp"
	out, err := execIn(ctx, f, "survivor", "sh", "-c", connect)
	if err != nil || !strings.Contains(out, "connected") {
		t.Fatalf("survivor cannot reach %s:%s before the teardown: %v\n%s", host, s3Port, err, out)
	}
	before := bridgeState(t)
	ports := bridgePorts(t)
	if before.mac != bridgeMAC || before.assign != netAddrSet {
		t.Errorf("cni0 has MAC %s (addr_assign_type %s); want %s set by the testbed (type %s), or it follows its ports (hack/cluster.sh)",
			before.mac, before.assign, bridgeMAC, netAddrSet)
	}

	zero := int64(0)
	if err := f.Client.CoreV1().Pods(f.Namespace).Delete(ctx, "victim", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// The sandbox is gone when its veth has left the bridge.
	deadline := time.Now().Add(90 * time.Second)
	for bridgePorts(t) >= ports {
		if time.Now().After(deadline) {
			t.Fatalf("the victim's veth is still on cni0 90 s after the delete (%d ports)", bridgePorts(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
	after := bridgeState(t)
	if after != before {
		t.Errorf("cni0 changed across the teardown: %+v -> %+v", before, after)
	}
	start := time.Now()
	out, err = execIn(ctx, f, "survivor", "sh", "-c", connect)
	took := time.Since(start)
	if err != nil || !strings.Contains(out, "connected") {
		t.Errorf("survivor's connect to %s:%s after the teardown did not succeed within nc's 1 s: %v\n%s", host, s3Port, err, out)
	}
	// /proc/net/arp: IP, HW type, flags, HW address, mask, device.
	for _, line := range strings.Split(out, "\n") {
		if fields := strings.Fields(line); len(fields) >= 4 && fields[0] == host && fields[3] != after.mac {
			t.Errorf("survivor's neighbour entry for %s is %s, not cni0's %s", host, fields[3], after.mac)
		}
	}
	t.Logf("cni0 %s (type %s) unchanged across the teardown; reconnect (exec included) took %s", after.mac, after.assign, took.Round(time.Millisecond))
}

type bridge struct{ mac, assign string }

func bridgeState(t *testing.T) bridge {
	t.Helper()
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join("/sys/class/net/cni0", f))
		if err != nil {
			t.Fatalf("read cni0's %s (the test runs on the node): %v", f, err)
		}
		return strings.TrimSpace(string(b))
	}
	return bridge{mac: read("address"), assign: read("addr_assign_type")}
}

func bridgePorts(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/sys/class/net/cni0/brif")
	if err != nil {
		t.Fatalf("list cni0's ports: %v", err)
	}
	return len(ents)
}

// execIn runs cmd in pod's main container through the API server and
// returns its stdout, then its stderr.
func execIn(ctx context.Context, f *framework.Framework, pod string, cmd ...string) (string, error) {
	u := f.Client.CoreV1().RESTClient().Post().Namespace(f.Namespace).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewSPDYExecutor(f.Config, "POST", u)
	if err != nil {
		return "", err
	}
	// One buffer each: the streams are written from separate goroutines.
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String() + stderr.String(), err
}

// longOutput prints 4 MiB of lines, then the answer, as a script that
// logs its progress and prints its result last would: 16 times what the
// result keeps, and a log file (each 64-byte line stamped by the runtime,
// about 6.6 MB) under the kubelet's containerLogMaxSize (10 MiB). A longer
// log can be rotated while main runs, and the kubelet then serves only the
// newest file (with 10 MiB here, one CI run read 204,817 bytes of
// 10,485,777 on kubelet): a loss the README states, which no log reader
// can see or count.
const (
	longOutputBytes = 4 << 20
	longOutputTail  = "the answer is 42"
	longOutput      = "yes 'a line of progress output, 64 bytes long, to pad the log...' | head -c 4194304; echo " + longOutputTail
)

// checkLongResult: the step succeeded with the tail intact and says how
// much it dropped, exactly.
func checkLongResult(t *testing.T, out *wf.NodeOutputs, waitLog string) {
	t.Helper()
	if out == nil || out.Result == nil {
		t.Fatalf("no result reported; wait log:\n%s", tail(waitLog, 2000))
	}
	r := *out.Result
	if !strings.HasSuffix(r, longOutputTail) {
		t.Errorf("result does not end with the script's last line %q: ...%q", longOutputTail, r[max(0, len(r)-80):])
	}
	total := int64(longOutputBytes + len(longOutputTail) + 1)
	kept := int64(len(r) + 1) // one trailing newline stripped
	if !out.ResultTruncated || out.ResultDroppedBytes+kept != total {
		t.Errorf("resultTruncated %v, resultDroppedBytes %d + %d kept; want true and %d in all", out.ResultTruncated, out.ResultDroppedBytes, kept, total)
	}
	if !strings.Contains(waitLog, "drops the first") {
		t.Errorf("wait's log does not say how many bytes the result dropped")
	}
	t.Logf("result keeps %d bytes of %d (%d dropped)", kept, total, out.ResultDroppedBytes)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// badUTF8 writes 300 bytes that are not UTF-8 (random after a 0xff at
// offset 3) where the template's parameter bin reads them.
const badUTF8 = `printf 'abc\377' > /work/bin; head -c 296 /dev/urandom >> /work/bin`

var badUTF8Want = []string{`output parameter "bin"`, "first bad byte 0xff at offset 3 of 300", "output artifact"}

func binTemplate(e *wfEnv) *wf.Template {
	tmpl := e.template("binary", badUTF8)
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "bin", ValueFrom: &wf.ValueFrom{Path: "/work/bin"}}}
	return tmpl
}

func longScript(e *wfEnv) *wf.Template {
	return &wf.Template{Name: "long", Script: &wf.ScriptTemplate{
		Container: corev1.Container{Image: e.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"}, SecurityContext: mainSecurityContext()},
		Source:    longOutput,
	}}
}

// TestDefectOutputs (defects 1 and 2) runs on the backends whose pods run
// on this kubelet: a script that prints 10 MiB succeeds with its tail, and a
// parameter that is not UTF-8 fails the step with an error naming it.
func TestDefectOutputs(t *testing.T) {
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newWfEnv(t, backend)
			t.Run("LongResult", func(t *testing.T) {
				t.Parallel()
				r := e.run(t, "long-result", longScript(e), nil, false)
				if r.pod.Status.Phase != corev1.PodSucceeded {
					t.Errorf("phase %s, want Succeeded", r.pod.Status.Phase)
				}
				checkLongResult(t, r.outputs, r.waitLog)
			})
			t.Run("NonUTF8Parameter", func(t *testing.T) {
				t.Parallel()
				r := e.run(t, "binary", binTemplate(e), nil, false)
				if r.pod.Status.Phase != corev1.PodFailed {
					t.Errorf("phase %s, want Failed", r.pod.Status.Phase)
				}
				var msg string
				for _, cs := range r.pod.Status.ContainerStatuses {
					if cs.Name == wf.WaitContainerName && cs.State.Terminated != nil {
						msg = cs.State.Terminated.Message
					}
				}
				for _, w := range badUTF8Want {
					if !strings.Contains(r.waitLog, w) || !strings.Contains(msg, w) {
						t.Errorf("wait's log and termination message (%q) do not both say %q", msg, w)
					}
				}
				if r.outputs != nil {
					for _, p := range r.outputs.Parameters {
						if p.Name == "bin" {
							t.Errorf("parameter bin reported as %q: it must not be replaced", p.Value)
						}
					}
				}
			})
		})
	}
}

// TestDefectOutputsDocker is TestDefectOutputs on the docker backend, on
// dockerd directly (see TestDockerWorkflow).
func TestDefectOutputsDocker(t *testing.T) {
	e := newWfEnv(t, wf.ExecutorDocker)
	t.Run("LongResult", func(t *testing.T) {
		tmpl := longScript(e)
		s := newDockerStep(t, e, "docker-long", tmpl)
		s.busybox(t, "main", longOutput)
		s.wait(t, wf.SidecarModeNative)
		code, log, out := s.start(t, "main", "wait")
		if code != 0 {
			t.Errorf("wait exited %d", code)
		}
		checkLongResult(t, out, log)
	})
	t.Run("NonUTF8Parameter", func(t *testing.T) {
		tmpl := binTemplate(e)
		s := newDockerStep(t, e, "docker-binary", tmpl)
		s.busybox(t, "main", badUTF8)
		s.wait(t, wf.SidecarModeNative)
		code, log, _ := s.start(t, "main", "wait")
		if code == 0 {
			t.Errorf("wait exited 0 with a parameter that is not UTF-8")
		}
		for _, w := range badUTF8Want {
			if !strings.Contains(log, w) {
				t.Errorf("wait's log does not say %q", w)
			}
		}
	})
}

// TestDefectInitFailure (defect 3): init rightly refuses an input archive
// whose entry out/root links to /; the error reaches the user: init's
// termination message holds it, and `argoexec-step run` names init,
// prints that message and init's log, and says main and wait never started
// instead of printing their empty logs.
func TestDefectInitFailure(t *testing.T) {
	e := newWfEnv(t, wf.ExecutorK8sAPI)
	ctx := e.f.Context()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range []*tar.Header{
		{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "out/root", Typeflag: tar.TypeSymlink, Linkname: "/", Mode: 0o777},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s3.PutObject(ctx, e.bucket, "evil/out.tgz", bytes.NewReader(buf.Bytes()), int64(buf.Len()), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	tmpl := e.template("evil-input", "ls /in/out")
	tmpl.Inputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/in/out", S3: &wf.S3Artifact{Key: "evil/out.tgz"}}}

	dir := t.TempDir()
	tb, err := yaml.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := yaml.Marshal(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tf, cf := filepath.Join(dir, "template.yaml"), filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(tf, tb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cf, cb, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	runErr := app.Run(ctx, []string{"run", "--template", tf, "--configmap", cf, "--kubeconfig", e.f.Env.Kubeconfig,
		"--namespace", e.f.Namespace, "--service-account", "argoexec", "--name", "evil-input", "--timeout", "90s"},
		app.IO{Out: &out, Err: &stderr})
	t.Logf("argoexec-step run: %v\n%s", runErr, out.String())
	pod, err := e.f.Client.CoreV1().Pods(e.f.Namespace).Get(ctx, "evil-input", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == wf.InitContainerName && cs.State.Terminated != nil {
			msg = cs.State.Terminated.Message
		}
	}
	const refusal = `archive entry "out/root"`
	if !strings.Contains(msg, refusal) {
		t.Errorf("init's termination message %q does not hold its refusal (%s)", msg, refusal)
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "init exited 1") || !strings.Contains(runErr.Error(), refusal) {
		t.Errorf("run's error %v does not name init and its refusal", runErr)
	}
	for _, w := range []string{
		"--- init (init container) failed: exited 1 (Error) ---",
		"message:\n  " + firstLineOf(msg),
		"--- init log (last 20 lines) ---",
		"--- main: never started (PodInitializing): no log ---",
		"--- wait: never started (PodInitializing): no log ---",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("run's output lacks %q", w)
		}
	}
	if strings.Contains(out.String(), "--- main log") {
		t.Errorf("run printed main's log, but main never started")
	}
	// init's log tail holds the refusal too.
	if i := strings.Index(out.String(), "--- init log"); i < 0 || !strings.Contains(out.String()[i:], refusal) {
		t.Errorf("run's output has no init log tail with the refusal")
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestDefectConfigErrorCLI (defect 4): the argoexec-step binary,
// given a ConfigMap in Argo's per-key layout whose kubeletPort is a quoted
// string, says so in the user's terms and exits 2, and refuses an empty
// executor image.
func TestDefectConfigErrorCLI(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "argoexec-step")
	build := exec.Command("go", "build", "-o", bin, "./cmd/argoexec-step")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tmpl := filepath.Join(repoRoot(), "examples", "script-result.yaml")
	for _, tc := range []struct{ name, cm, want string }{
		{"quoted port, per-key layout", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: workflow-controller-configmap, namespace: argo}\ndata:\n  kubeletPort: '\"10250\"'\n",
			`ConfigMap argo/workflow-controller-configmap (per-key layout): parse config: kubeletPort: "10250" is a string; want a whole number: write kubeletPort: 10250, without quotes`},
		{"empty executor image, config key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: workflow-controller-configmap, namespace: argo}\ndata:\n  config: |\n    executor: {image: \"\"}\n",
			"executor.image: empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := filepath.Join(t.TempDir(), "cm.yaml")
			if err := os.WriteFile(cm, []byte(tc.cm), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "render", "--template", tmpl, "--configmap", cm)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != app.ExitUsage || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "Go struct") {
				t.Errorf("render exited %s with:\n%s\nwant exit %d and %q", strconv.Itoa(code), out, app.ExitUsage, tc.want)
			}
		})
	}
}

// debianImage is a Debian bookworm image whose /bin/sh is dash: one of the
// names hack/images.sh gives the rootfs it builds for Argo's examples
// (ARGO_EXAMPLE_TAGS), imported into containerd by hack/argo.sh.
const debianImage = "docker.io/library/debian:latest"

// onImage sets every container of pod to image.
func onImage(pod *corev1.Pod, image string) *corev1.Pod {
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Image = image
	}
	return pod
}

// TestDefect25KillDebian (issue 25 item 0): the conformance suite's Kill
// cases on a Debian image, where Kill's commands run in dash. Before the
// fix, `kill -s KILL -1` was refused by dash ("Illegal option -1") and the
// refusal hidden, so a PID 1 that exits once its child is SIGKILLed was
// left running and reported as a PID 1 that cannot be SIGKILLed.
func TestDefect25KillDebian(t *testing.T) {
	t.Run(wf.ExecutorK8sAPI, func(t *testing.T) {
		t.Parallel()
		executortest.RunKillConformance(t, executortest.Env{
			Backend: "k8sapi",
			Start: func(t *testing.T, cs []executortest.Container) executor.ContainerRuntimeExecutor {
				f := framework.New(t)
				kubeconfig := k8sapiKubeconfig(t, f, "argoexec-k8sapi", k8sapiRules)
				return k8sapiStarted(t, f, kubeconfig, onImage(scriptPod(f, "kill-debian", cs), debianImage))
			},
		})
	})
	t.Run(wf.ExecutorKubelet, func(t *testing.T) {
		t.Parallel()
		executortest.RunKillConformance(t, executortest.Env{
			Backend: "kubelet",
			Start: func(t *testing.T, cs []executortest.Container) executor.ContainerRuntimeExecutor {
				f := framework.New(t)
				token := kubeletToken(t, f, "argoexec-kubelet", kubeletRules(t))
				pod := onImage(scriptPod(f, "kill-debian", cs), debianImage)
				kubeletStartPod(t, f, pod)
				x, err := kubelet.New(kubeletConfig(f, pod.Name, token), testLog(t, nil))
				if err != nil {
					t.Fatalf("kubelet.New: %v", err)
				}
				return x
			},
		})
	})
}

// Issue 25 items 1 and 6a: a result over 256 KiB keeps exactly 262,144
// bytes, as Argo's (the newline stripped first), and two bytes that are
// not UTF-8 near its end are reported as replaced, with their offset.
const (
	replacedScript = `yes 'abcdefghijklmnopqrstuvwxyz0123456789' | head -c 300000; printf 'end\377\376tail\n'`
	replacedTotal  = 300000 + len("end") + 2 + len("tail") // newline stripped
	replacedFirst  = 300000 + len("end")
)

// TestDefect25Result runs replacedScript as a script on the backends whose
// pods run on this kubelet (our controller: the outputs annotation).
func TestDefect25Result(t *testing.T) {
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newWfEnv(t, backend)
			tmpl := &wf.Template{Name: "replaced", Script: &wf.ScriptTemplate{
				Container: corev1.Container{Image: e.f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"}, SecurityContext: mainSecurityContext()},
				Source:    replacedScript,
			}}
			r := e.run(t, "replaced", tmpl, nil, false)
			if r.pod.Status.Phase != corev1.PodSucceeded {
				t.Errorf("phase %s, want Succeeded (replaced bytes are said, not fatal)", r.pod.Status.Phase)
			}
			if r.outputs == nil || r.outputs.Result == nil {
				t.Fatalf("no result; wait log:\n%s", tail(r.waitLog, 2000))
			}
			res := *r.outputs.Result
			// The JSON decode turned each replaced byte into U+FFFD (3
			// bytes). wait keeps 262,144 bytes (its log says so); the
			// annotation's budget may cut more, and the outputs say how much.
			kept := len(res) - 2*2
			if !strings.HasSuffix(res, "end\uFFFD\uFFFDtail") {
				t.Errorf("result ends %q", res[max(0, len(res)-20):])
			}
			want := &wf.ResultReplacement{Bytes: 2, FirstOffset: int64(replacedFirst)}
			if got := r.outputs.ResultReplaced; got == nil || *got != *want {
				t.Errorf("resultReplaced = %+v, want %+v", got, want)
			}
			if d := r.outputs.ResultDroppedBytes; d+int64(kept) != int64(replacedTotal) {
				t.Errorf("resultDroppedBytes %d + %d kept = %d, want %d", d, kept, d+int64(kept), replacedTotal)
			}
			for _, w := range []string{"keeps the last 262144", "2 bytes that are not UTF-8", "offset 300003"} {
				if !strings.Contains(r.waitLog, w) {
					t.Errorf("wait's log does not say %q", w)
				}
			}
		})
	}
}
