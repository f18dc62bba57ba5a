//go:build e2e

package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The fault suite under Argo v3.3.8's own controller (hack/argo.sh): each case runs one
// two-step workflow per controller (Argo's own argoexec image, and ours) and backend at once,
// injects one fault while wait waits or saves, and checks what the workflow ends with. The
// first step (produce) waits in main for the test to release it, then writes a parameter, an
// artifact and its result; the second (consume) receives all three and writes them to the
// host directory, so that a case sees whether downstream steps got the outputs, byte for
// byte, after the fault. A fault that cannot leave the outputs intact (the pod deleted, wait
// SIGKILLed) must end the workflow not Succeeded, with a message, never hang. Our image's cells
// are judged; Argo's own argoexec's are recorded beside them (observe), not judged: the table
// is the comparison.

// argoCaseTimeout bounds one case up to the fault's end, every workflow together.
const argoCaseTimeout = 4 * time.Minute

// argoCellBound bounds how long one of our cells waits, after the fault, for its workflow to
// end; argoUpstreamBound, one of Argo's own argoexec's (whose outcome is recorded: a workflow
// it never ends is said so in the table when the bound passes).
const (
	argoCellBound     = 150 * time.Second
	argoUpstreamBound = 90 * time.Second
)

// argoBackendsUnderFaults: the exec backends, whose wait reaches main through the API server
// or the kubelet, which the faults stop, and emissary (Argo's default), whose wait reads files
// on the pod's volume: only its report meets the faults.
var argoBackendsUnderFaults = []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet, "emissary"}

// argoWorkflow is the two-step workflow; @DIR@ is the host directory shared with the test.
const argoWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: fault-
spec:
  entrypoint: main
  activeDeadlineSeconds: 600
  volumes:
  - name: sync
    hostPath: {path: "@DIR@", type: Directory}
  templates:
  - name: main
    steps:
    - - name: produce
        template: produce
    - - name: consume
        template: consume
        arguments:
          parameters:
          - {name: answer, value: "{{steps.produce.outputs.parameters.answer}}"}
          - {name: result, value: "{{steps.produce.outputs.result}}"}
          artifacts:
          - {name: data, from: "{{steps.produce.outputs.artifacts.out}}"}
  - name: produce
    volumes:
    - name: work
      emptyDir: {}
    script:
      image: "@BUSYBOX@"
      imagePullPolicy: Never
      command: [sh]
      source: |
        echo started > /sync/started
        while [ ! -e /sync/go ]; do sleep 0.1; done
        mkdir -p /work/out
        cp /sync/data.bin /work/out/data.bin
        cp /sync/answer /work/answer
        touch /sync/done
        cat /sync/result
      volumeMounts:
      - {name: work, mountPath: /work}
      - {name: sync, mountPath: /sync}
    outputs:
      parameters:
      - name: answer
        valueFrom: {path: /work/answer}
      artifacts:
      - {name: out, path: /work/out}
  - name: consume
    inputs:
      parameters:
      - name: answer
      - name: result
      artifacts:
      - {name: data, path: /in}
    container:
      image: "@BUSYBOX@"
      imagePullPolicy: Never
      command: [sh, -c]
      args: ['printf %s "$ANSWER" > /sync/got-answer; printf %s "$RESULT" > /sync/got-result; cp /in/data.bin /sync/got-data.bin']
      env:
      - {name: ANSWER, value: "{{inputs.parameters.answer}}"}
      - {name: RESULT, value: "{{inputs.parameters.result}}"}
      volumeMounts:
      - {name: sync, mountPath: /sync}
`

// argoRun is one workflow of a case: one controller, one backend.
type argoRun struct {
	a       *framework.Argo
	backend string
	dir     string // host dir, /sync in both steps
	answer  string
	result  string
	data    []byte
	name    string     // the workflow's name
	pod     corev1.Pod // produce's pod, once it runs
	tokens  *argoTokens
}

func (r *argoRun) label() string { return r.a.Controller.Name + "/" + r.backend }

func (r *argoRun) exists(name string) bool {
	_, err := os.Stat(filepath.Join(r.dir, name))
	return err == nil
}

func (r *argoRun) read(name string) []byte {
	b, _ := os.ReadFile(filepath.Join(r.dir, name))
	return b
}

// newArgoRun writes the run's inputs into a fresh host directory and submits its workflow.
func newArgoRun(ctx context.Context, t *testing.T, a *framework.Argo, backend string,
	prepare func(context.Context, *testing.T, *argoRun, *unstructured.Unstructured)) *argoRun {
	t.Helper()
	dir, err := os.MkdirTemp("", "argoexec-argofaults-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &argoRun{a: a, backend: backend, dir: dir,
		answer: "answer " + randHex(t, 8) + " ünïcode",
		result: "result " + randHex(t, 8),
		data:   make([]byte, 512<<10),
	}
	if _, err := rand.Read(r.data); err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{"answer": []byte(r.answer), "result": []byte(r.result), "data.bin": r.data} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	y := strings.NewReplacer("@DIR@", dir, "@BUSYBOX@", a.Env.BusyboxImage).Replace(argoWorkflow)
	u, err := framework.ParseWorkflow([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(ctx, t, r, u)
	}
	created, err := a.Submit(ctx, u, backend)
	if err != nil {
		t.Fatalf("%s: submit: %v", r.label(), err)
	}
	r.name = created.GetName()
	return r
}

// waitLog is what produce's wait has logged so far, read on the node (it needs no API).
func (r *argoRun) waitLog() string {
	if r.pod.UID == "" {
		return ""
	}
	m, _ := filepath.Glob(filepath.Join("/var/log/pods", r.pod.Namespace+"_"+r.pod.Name+"_"+string(r.pod.UID), wf.WaitContainerName, "*.log"))
	var b []byte
	for _, f := range m {
		c, _ := os.ReadFile(f)
		b = append(b, c...)
	}
	return string(b)
}

// waitingLine is what each image's wait logs once it waits for main; mainExitedLine, once it
// has seen main exit and starts saving.
func (r *argoRun) waitingLine() string {
	if r.a.Controller.Name == "upstream" {
		return "Starting Workflow Executor"
	}
	return "waiting for main to exit"
}

func (r *argoRun) mainExitedLine() string {
	if r.a.Controller.Name == "upstream" {
		return "Main container completed"
	}
	return "main exited; collecting outputs"
}

// untilWaiting returns once produce's main runs and its wait waits for it.
func (r *argoRun) untilWaiting(ctx context.Context) error {
	return poll(ctx, "produce of "+r.label()+" to run and its wait to wait", func() bool {
		if !r.exists("started") {
			return false
		}
		if r.pod.UID == "" {
			pods, err := r.a.WorkflowPods(ctx, r.name)
			if err != nil || len(pods) != 1 {
				return false
			}
			r.pod = pods[0]
		}
		return strings.Contains(r.waitLog(), r.waitingLine())
	})
}

func (r *argoRun) release(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *argoRun) untilMainDone(ctx context.Context) error {
	return poll(ctx, "produce's main of "+r.label()+" to write its outputs", func() bool { return r.exists("done") })
}

func (r *argoRun) untilLogged(ctx context.Context, text string) error {
	return poll(ctx, "produce's wait of "+r.label()+" to log "+text, func() bool { return strings.Contains(r.waitLog(), text) })
}

// finish waits for the workflow to end and collects it.
func (r *argoRun) finish(ctx context.Context, t *testing.T) *framework.WorkflowOutcome {
	t.Helper()
	u, err := r.a.WaitForWorkflow(ctx, r.name)
	if err != nil {
		t.Fatalf("%s: %v\nproduce's wait log:\n%s", r.label(), err, r.waitLog())
	}
	o, err := r.a.Collect(ctx, u)
	if err != nil {
		t.Logf("%s: collect: %v", r.label(), err)
	}
	return o
}

// problems lists what keeps o from being intact: the workflow Succeeded, produce reported every
// output byte for byte, and consume received them all. None means intact.
func (r *argoRun) problems(o *framework.WorkflowOutcome) []string {
	if o.Phase != "Succeeded" {
		return []string{fmt.Sprintf("workflow %s: %s, want Succeeded\n%s", o.Phase, o.Message, describeNodes(o))}
	}
	n := o.Node("produce")
	if n == nil {
		return []string{"no produce node:\n" + describeNodes(o)}
	}
	var out []string
	if got := n.Parameters["answer"]; got != r.answer {
		out = append(out, fmt.Sprintf("produce's parameter answer = %q, want %q", got, r.answer))
	}
	if n.Result == nil || *n.Result != r.result {
		out = append(out, fmt.Sprintf("produce's result = %q, want %q", deref(n.Result), r.result))
	}
	art := n.Artifacts["out"]
	got, ok := art["out/data.bin"]
	if !ok {
		got, ok = art["data.bin"]
	}
	if !ok || got != string(r.data) {
		out = append(out, fmt.Sprintf("produce's artifact out holds %d files (%v), not data.bin as main wrote it", len(art), keysOf(art)))
	}
	if got := string(r.read("got-answer")); got != r.answer {
		out = append(out, fmt.Sprintf("consume got answer %q, want %q", got, r.answer))
	}
	if got := string(r.read("got-result")); got != r.result {
		out = append(out, fmt.Sprintf("consume got result %q, want %q", got, r.result))
	}
	if got := r.read("got-data.bin"); !bytes.Equal(got, r.data) {
		out = append(out, fmt.Sprintf("consume got %d bytes of data, not the %d produce wrote", len(got), len(r.data)))
	}
	return out
}

// checkIntact fails unless o is intact (problems).
func (r *argoRun) checkIntact(t *testing.T, o *framework.WorkflowOutcome) {
	t.Helper()
	for _, p := range r.problems(o) {
		t.Errorf("%s: %s", r.label(), p)
	}
	if t.Failed() {
		t.Logf("produce's wait log:\n%s", r.waitLog())
	}
}

// observe is what Argo's own argoexec's cells get: its outcome is recorded, not judged (the
// table shows it beside ours), within ctx.
func (r *argoRun) observe(ctx context.Context) string {
	u, err := r.a.WaitForWorkflow(ctx, r.name)
	if err != nil {
		phase := "never seen"
		if u != nil {
			phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
		}
		return fmt.Sprintf("did not end (still %s when the case's bound passed)", phase)
	}
	o, err := r.a.Collect(ctx, u)
	if err != nil {
		return "collect: " + err.Error()
	}
	if o.Phase == "Succeeded" {
		if p := r.problems(o); len(p) > 0 {
			return "Succeeded WITHOUT its outputs: " + firstLine(p[0])
		}
		return "outputs intact, consume got them"
	}
	if n := o.Node("produce"); n != nil {
		return fmt.Sprintf("%s: %s", n.Phase, firstLine(n.Message))
	}
	return fmt.Sprintf("%s: %s", o.Phase, firstLine(o.Message))
}

// intactOutcome checks and names an intact outcome.
func (r *argoRun) intactOutcome(ctx context.Context, t *testing.T) string {
	r.checkIntact(t, r.finish(ctx, t))
	return "outputs intact, consume got them"
}

// failedOutcome checks a workflow that cannot have its outputs: it must not succeed without
// them, and its produce node must say why. A Succeeded workflow passes only with every output.
func (r *argoRun) failedOutcome(ctx context.Context, t *testing.T) string {
	o := r.finish(ctx, t)
	if o.Phase == "Succeeded" {
		r.checkIntact(t, o)
		return "Succeeded, outputs intact"
	}
	n := o.Node("produce")
	if n == nil {
		t.Fatalf("%s: workflow %s with no produce node:\n%s", r.label(), o.Phase, describeNodes(o))
	}
	if n.Phase == "Succeeded" {
		t.Errorf("%s: produce Succeeded in a workflow that %s: %s", r.label(), o.Phase, o.Message)
	}
	if n.Message == "" {
		t.Errorf("%s: produce is %s with no message", r.label(), n.Phase)
	}
	return fmt.Sprintf("%s: %s", n.Phase, firstLine(n.Message))
}

func describeNodes(o *framework.WorkflowOutcome) string {
	var b strings.Builder
	for _, n := range o.Nodes {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", n.DisplayName, n.Type, n.Phase, n.Message)
	}
	return b.String()
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// killWait SIGKILLs the argoexec wait process of produce's pod, found by the pod name in its
// environment (ARGO_POD_NAME): only that process is signalled.
func (r *argoRun) killWait(t *testing.T) {
	t.Helper()
	want := []byte(wf.EnvPodName + "=" + r.pod.Name + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte("argoexec\x00wait")) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("%s: SIGKILL wait (pid %d): %v", r.label(), pid, err)
		}
		t.Logf("%s: SIGKILLed wait (pid %d)", r.label(), pid)
		return
	}
	t.Fatalf("%s: no argoexec wait process of pod %s found", r.label(), r.pod.Name)
}

// argoFault is one case of the Argo fault suite.
type argoFault struct {
	name string
	// prepare, when not nil, changes each run's workflow before it is submitted.
	prepare func(ctx context.Context, t *testing.T, r *argoRun, u *unstructured.Unstructured)
	inject  func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun)
	check   func(ctx context.Context, t *testing.T, r *argoRun) string
}

func releaseRuns(ctx context.Context, t *testing.T, runs []*argoRun) {
	t.Helper()
	for _, r := range runs {
		r.release(t)
	}
	for _, r := range runs {
		if err := r.untilMainDone(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// argoScript runs hack/argo.sh with args, bounded.
func argoScript(t *testing.T, args ...string) {
	t.Helper()
	testbed{script: filepath.Join(framework.RepoRoot(), "hack", "argo.sh")}.run(t, args...)
}

func argoFaults() []argoFault {
	intact := func(ctx context.Context, t *testing.T, r *argoRun) string { return r.intactOutcome(ctx, t) }
	return []argoFault{
		{
			// wait saves while the API server is down: the task result waits for it
			name: "APIServerDown10s",
			inject: func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun) {
				start := time.Now()
				tb.kill(t, "apiserver")
				releaseRuns(ctx, t, runs)
				time.Sleep(time.Until(start.Add(outage))) // the fault's length
				tb.up(t, "apiserver")
			},
			check: intact,
		},
		{
			name: "EtcdPausedDuringReport",
			inject: func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun) {
				releaseRuns(ctx, t, runs)
				for _, r := range runs {
					if err := r.untilLogged(ctx, r.mainExitedLine()); err != nil {
						t.Fatal(err)
					}
				}
				tb.pause(t, "etcd")
				time.Sleep(etcdStall) // the fault's length
				tb.resume(t, "etcd")
			},
			check: intact,
		},
		{
			name: "KubeletRestarted",
			inject: func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun) {
				tb.kill(t, "kubelet")
				releaseRuns(ctx, t, runs)
				tb.up(t, "kubelet")
			},
			check: intact,
		},
		{
			name: "ContainerdRestarted",
			inject: func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun) {
				tb.stop(t, "containerd")
				tb.up(t, "containerd")
				releaseRuns(ctx, t, runs)
			},
			check: intact,
		},
		{
			// Argo's controller is SIGKILLed while main runs and started again after wait
			// has reported: the new controller must still hand the outputs downstream
			name: "ControllerRestarted",
			inject: func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun) {
				t.Cleanup(func() { argoScript(t, "start") })
				argoScript(t, "kill")
				releaseRuns(ctx, t, runs)
				for _, r := range runs {
					if err := r.untilLogged(ctx, r.mainExitedLine()); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(3 * time.Second) // wait reports while no controller runs
				argoScript(t, "start")
			},
			check: intact,
		},
		{
			// the token wait and init read is rotated while wait waits (token_test.go says
			// how the suite stands in for the kubelet's rotation); the first service account
			// is deleted, so wait reports only if it reads the file again
			name: "ServiceAccountTokenRotated",
			prepare: func(ctx context.Context, t *testing.T, r *argoRun, u *unstructured.Unstructured) {
				r.tokens = newArgoTokens(ctx, t, r, u)
			},
			inject: func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun) {
				for _, r := range runs {
					r.tokens.rotate(ctx, t)
				}
				releaseRuns(ctx, t, runs)
			},
			check: intact,
		},
		{
			name: "PodDeleted",
			inject: func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun) {
				grace := int64(10)
				for _, r := range runs {
					if err := r.a.Client.CoreV1().Pods(r.pod.Namespace).Delete(ctx, r.pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
						t.Fatal(err)
					}
				}
			},
			check: func(ctx context.Context, t *testing.T, r *argoRun) string {
				if r.backend == "emissary" {
					// Under Argo v3.3.8's controller a deleted emissary pod left the workflow
					// Running past 150 s with either image (2026-12-02): the controller's doing,
					// not the executor's. Recorded, not judged, within a shorter bound.
					octx, cancel := context.WithTimeout(ctx, 60*time.Second)
					defer cancel()
					return r.observe(octx) + " (not judged: Argo's controller)"
				}
				return r.failedOutcome(ctx, t)
			},
		},
		{
			// wait is SIGKILLed while it saves the artifact (S3 paused holds it there): the
			// node must fail with a message, never succeed without its outputs
			name: "WaitKilledWhileSaving",
			inject: func(ctx context.Context, t *testing.T, tb testbed, runs []*argoRun) {
				tb.pause(t, "s3")
				releaseRuns(ctx, t, runs)
				for _, r := range runs {
					if err := r.untilLogged(ctx, r.mainExitedLine()); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Second) // wait is in its upload, held by the paused S3
				for _, r := range runs {
					r.killWait(t)
				}
				tb.resume(t, "s3")
			},
			check: func(ctx context.Context, t *testing.T, r *argoRun) string {
				out := r.failedOutcome(ctx, t)
				if r.a.Controller.Name == "ours" && !strings.Contains(out, "argoexec wait was stopped before it finished") {
					t.Errorf("%s: produce's message does not name wait: %s", r.label(), out)
				}
				return out
			},
		},
	}
}

// TestArgoFaults runs every Argo fault against both controllers' images and the exec backends,
// at once, and logs the table: Argo's own argoexec beside ours in each cell.
func TestArgoFaults(t *testing.T) {
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		t.Fatal(err)
	}
	tb := newTestbed()
	runLabel := "argofaults-" + randHex(t, 4)
	var argos []*framework.Argo
	for _, c := range ctrls {
		a, err := framework.NewArgo(context.Background(), c, runLabel)
		if err != nil {
			t.Fatal(err)
		}
		argos = append(argos, a)
		t.Cleanup(func() { _ = a.DeleteRun(context.Background()) })
	}
	var mu sync.Mutex
	cells := map[string]map[string]string{} // fault -> controller/backend -> outcome (time)
	var order []string
	defer func() {
		var b strings.Builder
		b.WriteString("\n| fault | backend |")
		for _, a := range argos {
			fmt.Fprintf(&b, " %s (%s) |", a.Controller.Name, a.Controller.Image)
		}
		b.WriteString("\n|---|---|" + strings.Repeat("---|", len(argos)) + "\n")
		for _, f := range order {
			for _, be := range argoBackendsUnderFaults {
				fmt.Fprintf(&b, "| %s | %s |", f, be)
				for _, a := range argos {
					fmt.Fprintf(&b, " %s |", cells[f][a.Controller.Name+"/"+be])
				}
				b.WriteString("\n")
			}
		}
		t.Log(b.String())
	}()
	for _, fc := range argoFaults() {
		order = append(order, fc.name)
		cells[fc.name] = map[string]string{}
		t.Run(fc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), argoCaseTimeout)
			defer cancel()
			start := time.Now()
			var runs []*argoRun
			for _, a := range argos {
				for _, be := range argoBackendsUnderFaults {
					runs = append(runs, newArgoRun(ctx, t, a, be, fc.prepare))
				}
			}
			for _, r := range runs {
				if err := r.untilWaiting(ctx); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s: every wait waits for main after %s", fc.name, time.Since(start).Round(100*time.Millisecond))
			fc.inject(ctx, t, tb, runs)
			t.Logf("%s: fault injected and undone after %s", fc.name, time.Since(start).Round(100*time.Millisecond))
			// Each cell is judged (ours) or observed (Argo's) beside the others, with its own bound:
			// a workflow that never ends holds up only its own cell.
			var cellsDone sync.WaitGroup
			for _, r := range runs {
				cellsDone.Go(func() {
					t.Run(r.label(), func(t *testing.T) {
						bound := argoCellBound
						if r.a.Controller.Name == "upstream" {
							bound = argoUpstreamBound
						}
						cctx, ccancel := context.WithTimeout(context.Background(), bound)
						defer ccancel()
						var outcome string
						defer func() {
							if t.Failed() {
								outcome = strings.TrimSpace("FAILED " + outcome)
							}
							mu.Lock()
							cells[fc.name][r.label()] = fmt.Sprintf("%s (%s)", outcome, time.Since(start).Round(100*time.Millisecond))
							mu.Unlock()
						}()
						if r.a.Controller.Name == "upstream" {
							outcome = r.observe(cctx)
							return
						}
						outcome = fc.check(cctx, t, r)
					})
				})
			}
			cellsDone.Wait()
		})
	}
}

// argoTokens is one run's pair of service accounts, bound as the namespace's default one is
// (Argo's executor grants), and the host directory that produce's init and wait read their
// token from (the pod's own token is not mounted: podSpecPatch).
type argoTokens struct {
	r      *argoRun
	first  string
	second string
	dir    string
}

func newArgoTokens(ctx context.Context, t *testing.T, r *argoRun, u *unstructured.Unstructured) *argoTokens {
	t.Helper()
	c, ns := r.a.Client, r.a.Controller.Namespace
	id := randHex(t, 4)
	at := &argoTokens{r: r, first: "fault-" + id + "-a", second: "fault-" + id + "-b"}
	for _, sa := range []string{at.first, at.second} {
		if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.CoreV1().ServiceAccounts(ns).Delete(context.Background(), sa, metav1.DeleteOptions{}) })
	}
	def := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: at.first, Namespace: ns}, {Kind: rbacv1.ServiceAccountKind, Name: at.second, Namespace: ns}}
	rbs, err := c.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rb := range rbs.Items {
		if !slices.Contains(rb.Subjects, def) {
			continue
		}
		nb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: rb.Name + "-" + id}, RoleRef: rb.RoleRef, Subjects: subjects}
		if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, nb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.RbacV1().RoleBindings(ns).Delete(context.Background(), nb.Name, metav1.DeleteOptions{}) })
	}
	crbs, err := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rb := range crbs.Items {
		if !slices.Contains(rb.Subjects, def) {
			continue
		}
		nb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: rb.Name + "-" + id}, RoleRef: rb.RoleRef, Subjects: subjects}
		if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, nb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.RbacV1().ClusterRoleBindings().Delete(context.Background(), nb.Name, metav1.DeleteOptions{})
		})
	}
	dir, err := os.MkdirTemp("", "argoexec-argofaults-sa-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	at.dir = dir
	ca, err := os.ReadFile(r.a.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	at.write(t, "ca.crt", string(ca))
	at.write(t, "namespace", ns)
	at.write(t, "token", token(ctx, t, r.a.Client, r.a.Controller.Namespace, at.first))
	mount := []any{map[string]any{"name": "sa-token", "mountPath": saDir, "readOnly": true}}
	patch := map[string]any{
		"automountServiceAccountToken": false,
		"volumes":                      []any{map[string]any{"name": "sa-token", "hostPath": map[string]any{"path": dir, "type": "Directory"}}},
		"initContainers":               []any{map[string]any{"name": "init", "volumeMounts": mount}},
		"containers":                   []any{map[string]any{"name": wf.WaitContainerName, "volumeMounts": mount}},
	}
	b, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	templates, _, _ := unstructured.NestedSlice(u.Object, "spec", "templates")
	for i, raw := range templates {
		if tm, _ := raw.(map[string]any); tm["name"] == "produce" {
			// produce alone runs as the first service account, which the rotation deletes
			tm["serviceAccountName"] = at.first
			tm["podSpecPatch"] = string(b)
			templates[i] = tm
		}
	}
	if err := unstructured.SetNestedSlice(u.Object, templates, "spec", "templates"); err != nil {
		t.Fatal(err)
	}
	return at
}

func (at *argoTokens) write(t *testing.T, name, content string) {
	t.Helper()
	(&tokenFile{dir: at.dir}).write(t, name, content)
}

// rotate writes the second service account's token and deletes the first, whose tokens the
// API server refuses from then on.
func (at *argoTokens) rotate(ctx context.Context, t *testing.T) {
	t.Helper()
	at.write(t, "token", token(ctx, t, at.r.a.Client, at.r.a.Controller.Namespace, at.second))
	if err := at.r.a.Client.CoreV1().ServiceAccounts(at.r.a.Controller.Namespace).Delete(ctx, at.first, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
