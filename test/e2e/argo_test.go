//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The argo tier: Argo Workflows v3.3.8's own, unmodified controller (hack/argo.sh) runs Argo's
// own examples, read from the Go module byte for byte (only the executor label is added, as
// `argo submit -l` would), on k8sapi and kubelet, with each executor image that
// ARGOEXEC_E2E_ARGO_IMAGES names: "upstream" (Argo's own argoexec v3.3.8) and "ours"
// (argoexec:dev); both by default. With both, the two must agree on the workflow phase and every
// node's outputs (parameters, results, artifact bytes in S3).

// argoCase is one example, unchanged or as its emptyDir variant.
type argoCase struct {
	example string // examples/<example>.yaml in the Argo module
	// emptyDir: an emptyDir mounted at each output's directory, nothing else changed
	// (framework.EmptyDirVariant): k8sapi and kubelet cannot read the image's base layer.
	emptyDir  bool
	wantPhase string
	// refused: the controller refuses the workflow before any pod exists; the message has this.
	refused string
	// upstreamFails: Argo's own argoexec fails this case by design (the reason): the workflow
	// ends in upstreamPhase with upstreamMessage in its message; ours must reach wantPhase, and
	// the two are not compared.
	// upstreamFails, upstreamPhase and upstreamMessage: how Argo's own
	// argoexec fails this by design on the exec backends (k8sapi, kubelet);
	// on emissary it does not.
	upstreamFails   string
	upstreamPhase   string
	upstreamMessage string
	random          bool // results and parameters differ from run to run (random numbers)
	// only, when set, is the one backend the case runs on: the containerSet examples need
	// emissary (Argo v3.3 runs container sets on it alone).
	only string
	// manifest, when set, is the workflow (YAML), and example only names the case.
	manifest string
	// upstreamDiffers: Argo's own argoexec ends this case otherwise, by design (the reason):
	// its outcome is logged, not judged, and the two images are not compared.
	upstreamDiffers string
	// gcs: the manifest uses the testbed's GCS emulator: @GCS_HOST@ in it is the emulator's
	// host:port (Env.GCSHost), and the bucket argoexec-e2e is created first.
	gcs bool
	// webdav: the manifest stores in the WebDAV server TestArgo starts (argoWebDAV): @WEBDAV_URL@
	// in it is the server's base URL. @S3_HOST@ and @S3_BUCKET@, in any manifest, are the
	// testbed's S3 host:port and the controller's repository bucket (the oss cases' endpoint).
	webdav bool
	// upstreamCheck, when set, judges Argo's own argoexec's outcome instead of wantPhase and
	// check (the case's upstreamDiffers says why it differs), and the two are not compared.
	upstreamCheck func(t *testing.T, o *framework.WorkflowOutcome)
	// urls, when set, point the example's URLs at the test's local HTTP server (argoHTTPServer):
	// each key, an external URL prefix in the example, is replaced by the server's address and
	// the value, a path prefix; nothing else changes. It marks an HTTP-template case: its nodes
	// run in Argo's agent pod, whose image and log the run checks (watchAgent).
	urls map[string]string
	// setup, when set, prepares the controller's namespace before the workflow is submitted.
	setup func(t *testing.T, a *framework.Argo)
	check func(t *testing.T, o *framework.WorkflowOutcome)
}

// on says whether c runs on backend: a case Argo's controller refuses for
// outputs outside a volume (refused) is about the exec backends alone;
// emissary reads those outputs, and runs the example unchanged in c's
// emptyDir case instead.
func (c argoCase) on(backend string) bool {
	if c.only != "" {
		return backend == c.only
	}
	return c.refused == "" || backend != "emissary"
}

func (c argoCase) name() string {
	if c.emptyDir {
		return c.example + "-emptydir"
	}
	return c.example
}

const useEmptyDir = "Use an emptyDir"

var argoCases = []argoCase{
	{example: "hello-world", wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		n := mustNode(t, o, "WF", "Succeeded")
		wantExit(t, n, "0")
		wantLogContains(t, n, "hello world")
	}},
	{example: "steps", wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		for _, s := range []string{"hello1", "hello2a", "hello2b"} {
			wantLogContains(t, mustNode(t, o, s, "Succeeded"), s)
		}
	}},
	{example: "dag-diamond", wantPhase: "Succeeded", check: dagNodes("A", "B", "C", "D")},
	{example: "dag-multiroot", wantPhase: "Succeeded", check: dagNodes("A", "B", "C", "D")},
	{example: "scripts-bash", wantPhase: "Succeeded", random: true, check: scriptResult},
	{example: "scripts-python", wantPhase: "Succeeded", random: true, check: scriptResult},
	{example: "input-artifact-raw", wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		n := mustNode(t, o, "WF", "Succeeded")
		if want := "this is\nthe raw file\ncontents\n"; n.MainLog != want {
			t.Errorf("main log %q, want %q", n.MainLog, want)
		}
	}},
	{example: "exit-code-output-variable", wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		wantExit(t, mustNode(t, o, "failing-container", "Failed"), "123")
		n := mustNode(t, o, "echo-container", "Succeeded")
		if got := n.InputParameters["exitCode"]; got != "123" {
			t.Errorf("echo-container input exitCode %q, want 123", got)
		}
		wantLogContains(t, n, "Exit code was: 123")
	}},
	// fails by design: the entrypoint exits 1; the exit handler runs and takes the failure branch
	{example: "exit-handlers", wantPhase: "Failed", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		wantExit(t, mustNode(t, o, "WF", "Failed"), "1")
		wantLogContains(t, mustNode(t, o, "notify", "Succeeded"), "send e-mail: "+o.Name+" Failed")
		wantLogContains(t, mustNode(t, o, "cry", "Succeeded"), "boohoo!")
		mustNode(t, o, "celebrate", "Skipped")
	}},
	{example: "volumes-emptydir", wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		wantLogContains(t, mustNode(t, o, "WF", "Succeeded"), "Volume mounted and found")
	}},

	// outputs from the image's base layer: refused for k8sapi and kubelet, then the emptyDir variant
	{example: "output-parameter", wantPhase: "Failed", refused: useEmptyDir},
	{example: "output-parameter", emptyDir: true, wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		wantParam(t, mustNode(t, o, "generate-parameter", "Succeeded"), "hello-param", "hello world")
		n := mustNode(t, o, "consume-parameter", "Succeeded")
		if got := n.InputParameters["message"]; got != "hello world" {
			t.Errorf("consume-parameter input message %q, want %q", got, "hello world")
		}
		wantLogContains(t, n, "hello world")
	}},
	{example: "artifact-passing", wantPhase: "Failed", refused: useEmptyDir},
	{example: "artifact-passing", emptyDir: true, wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		gen := mustNode(t, o, "generate-artifact", "Succeeded")
		files := gen.Artifacts["hello-art"]
		content, ok := files["hello_world.txt"]
		if !ok || len(files) != 1 {
			t.Fatalf("artifact hello-art: files %v, want exactly hello_world.txt", keys(files))
		}
		if !strings.Contains(content, "hello world") {
			t.Errorf("artifact hello-art: %q has no %q", content, "hello world")
		}
		if got := mustNode(t, o, "consume-artifact", "Succeeded").MainLog; got != content {
			t.Errorf("consume-artifact printed %q, want the artifact's %q", got, content)
		}
	}},
	{example: "global-outputs", wantPhase: "Failed", refused: useEmptyDir},
	{example: "global-outputs", emptyDir: true, wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		n := mustNode(t, o, "generate", "Succeeded")
		wantParam(t, n, "hello-param", "hello world")
		if got := n.Artifacts["hello-art"]["hello_world.txt"]; got != "hello world" {
			t.Errorf("artifact hello-art: %q, want %q (files %v)", got, "hello world", keys(n.Artifacts["hello-art"]))
		}
		if got := o.GlobalParameters["my-global-param"]; got != "hello world" {
			t.Errorf("global parameter my-global-param %q, want %q", got, "hello world")
		}
		if got := o.GlobalArtifacts["my-global-art"]["hello_world.txt"]; got != "hello world" {
			t.Errorf("global artifact my-global-art: %q, want %q", got, "hello world")
		}
		wantLogContains(t, mustNode(t, o, "consume-global-param", "Succeeded"), "hello world")
		if got := mustNode(t, o, "consume-global-art", "Succeeded").MainLog; got != "hello world" {
			t.Errorf("consume-global-art printed %q, want %q", got, "hello world")
		}
	}},
	{example: "parameter-aggregation", wantPhase: "Failed", refused: useEmptyDir},
	{example: "parameter-aggregation", emptyDir: true, wantPhase: "Succeeded",
		upstreamFails:   "k8sapi and kubelet read the combined log, so the `sh -x` trace lands in divide-by-2's result and the controller cannot parse `+ echo 2` as withParam JSON",
		upstreamPhase:   "Error",
		upstreamMessage: "invalid character '+'",
		check: func(t *testing.T, o *framework.WorkflowOutcome) {
			nodes := o.NodesOf("odd-or-even")
			if len(nodes) != 4 {
				t.Fatalf("%d odd-or-even nodes, want 4", len(nodes))
			}
			for _, n := range nodes {
				num, _ := strconv.Atoi(n.Parameters["num"])
				want := map[bool]string{true: "even", false: "odd"}[num%2 == 0]
				if num < 1 || num > 4 || n.Parameters["evenness"] != want {
					t.Errorf("%s: parameters %v, want num 1-4 and evenness %s", n.DisplayName, n.Parameters, want)
				}
			}
			var results []string
			for _, n := range o.NodesOf("divide-by-2") {
				if n.Result != nil {
					results = append(results, *n.Result)
				}
			}
			if strings.Join(results, ",") != "1,2" && strings.Join(results, ",") != "2,1" {
				t.Errorf("divide-by-2 results %q, want 1 and 2 (nothing but the script's stdout)", results)
			}
		}},

	// container sets: emissary alone
	{example: "container-set-template/sequence-workflow", only: "emissary", wantPhase: "Succeeded", check: containerNodes("a", "b", "c")},
	{example: "container-set-template/parallel-workflow", only: "emissary", wantPhase: "Succeeded", check: containerNodes("a", "b")},
	{example: "container-set-template/graph-workflow", only: "emissary", wantPhase: "Succeeded", check: containerNodes("a", "b", "c", "d")},
	{example: "container-set-template/workspace-workflow", only: "emissary", wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		n := mustNode(t, o, "WF", "Succeeded")
		wantParam(t, n, "out", "hi")
		if got := n.Artifacts["out"]["out"]; got != "hi\n" {
			t.Errorf("artifact out: %q, want %q (files %v)", got, "hi\n", keys(n.Artifacts["out"]))
		}
	}},
	{example: "container-set-template/outputs-result-workflow", only: "emissary", wantPhase: "Succeeded", check: func(t *testing.T, o *framework.WorkflowOutcome) {
		if r := mustNode(t, o, "a", "Succeeded").Result; r == nil || *r != "hi" {
			t.Errorf("a's result %v, want \"hi\"", r)
		}
		mustNode(t, o, "b", "Succeeded")
	}},
	// a legacy sidecar that ignores SIGTERM: ours escalates to SIGKILL after the grace
	{example: "sidecar-ignores-term", manifest: sidecarIgnoresTerm, only: "emissary", wantPhase: "Succeeded",
		upstreamDiffers: "Argo v3.3.8's emissary never escalates a stop to SIGKILL, so the sidecar keeps the pod running until the workflow's activeDeadlineSeconds",
		check: func(t *testing.T, o *framework.WorkflowOutcome) {
			wantLogContains(t, mustNode(t, o, "WF", "Succeeded"), "main done")
		}},
}

// sidecarIgnoresTerm is a step whose legacy sidecar ignores SIGTERM (its shell traps it, and
// its sleep is restarted); the workflow's deadline bounds what a stop that never escalates
// leaves running.
const sidecarIgnoresTerm = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: sidecar-ignores-term-
spec:
  entrypoint: main
  activeDeadlineSeconds: 90
  templates:
  - name: main
    container:
      image: alpine:3.7
      command: [sh, -c, "echo main done"]
    sidecars:
    - name: stubborn
      image: alpine:3.7
      command: [sh, -c, "trap '' TERM; while true; do sleep 1; done"]
`

// containerNodes checks a container set: the pod node and each named container's node
// Succeeded.
func containerNodes(names ...string) func(*testing.T, *framework.WorkflowOutcome) {
	return func(t *testing.T, o *framework.WorkflowOutcome) {
		mustNode(t, o, "WF", "Succeeded")
		for _, n := range names {
			mustNode(t, o, n, "Succeeded")
		}
	}
}

// Examples of v3.3.8 that need the network at run time (or an image that is not built here),
// left out of the tier.
var argoLeftOut = map[string]string{
	"input-artifact-git":                  "clones https://github.com/argoproj/argo-workflows.git",
	"input-artifact-http":                 "downloads kubectl from storage.googleapis.com",
	"arguments-artifacts":                 "downloads kubectl from storage.googleapis.com",
	"input-artifact-s3":                   "reads s3.amazonaws.com",
	"output-artifact-s3":                  "writes s3.amazonaws.com",
	"input-artifact-oss":                  "reads an Alibaba OSS endpoint",
	"artifactory-artifact":                "needs an Artifactory server",
	"ci, ci-output-artifact, influxdb-ci": "git clone from github.com, golang/influxdb images",
	"buildkit-template":                   "git clone from github.com and a registry push",
	"image-pull-secrets":                  "pulls from a registry",
	"exit-handler-slack":                  "posts to Slack",
	"daemon-nginx, sidecar-nginx, daemon-step, dag-daemon-task, sidecar": "nginx and influxdb images (servers not built here)",
}

func mustNode(t *testing.T, o *framework.WorkflowOutcome, display, phase string) *framework.NodeOutcome {
	t.Helper()
	n := o.Node(display)
	if n == nil {
		t.Fatalf("no node %q in workflow %s", display, o.Name)
	}
	if n.Phase != phase {
		t.Errorf("node %s: phase %s (%q), want %s", display, n.Phase, n.Message, phase)
	}
	return n
}

func wantExit(t *testing.T, n *framework.NodeOutcome, code string) {
	t.Helper()
	if n.ExitCode != code {
		t.Errorf("node %s: exit code %q, want %q", n.DisplayName, n.ExitCode, code)
	}
}

func wantParam(t *testing.T, n *framework.NodeOutcome, name, value string) {
	t.Helper()
	if got, ok := n.Parameters[name]; !ok || got != value {
		t.Errorf("node %s: output parameter %s = %q (set %v), want %q", n.DisplayName, name, got, ok, value)
	}
}

func wantLogContains(t *testing.T, n *framework.NodeOutcome, s string) {
	t.Helper()
	if !strings.Contains(n.MainLog, s) {
		t.Errorf("node %s: main log %q has no %q", n.DisplayName, n.MainLog, s)
	}
}

func dagNodes(names ...string) func(*testing.T, *framework.WorkflowOutcome) {
	return func(t *testing.T, o *framework.WorkflowOutcome) {
		for _, s := range names {
			n := mustNode(t, o, s, "Succeeded")
			if strings.TrimSpace(n.MainLog) != s {
				t.Errorf("node %s printed %q", s, n.MainLog)
			}
		}
	}
}

// scriptResult: gen-random-int's result is a number 1-100 that reaches print-message.
func scriptResult(t *testing.T, o *framework.WorkflowOutcome) {
	gen := mustNode(t, o, "generate", "Succeeded")
	if gen.Result == nil {
		t.Fatalf("generate: no result")
	}
	if v, err := strconv.Atoi(*gen.Result); err != nil || v < 1 || v > 100 {
		t.Errorf("generate: result %q, want a number 1-100", *gen.Result)
	}
	p := mustNode(t, o, "print", "Succeeded")
	if p.InputParameters["message"] != *gen.Result {
		t.Errorf("print: message %q, want the result %q", p.InputParameters["message"], *gen.Result)
	}
	wantLogContains(t, p, "result was: "+*gen.Result)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// argoRun is one workflow of the tier: a case on a backend under one controller.
type argoRun struct {
	c       argoCase
	backend string
	ctrl    framework.ArgoController
	outcome *framework.WorkflowOutcome
	took    time.Duration // submitted -> phase seen final
	ran     bool          // false when -run filtered it out
	httpURL string        // the local HTTP server's base URL (argoHTTPServer)
	// webdavURL is the WebDAV server's base URL (argoWebDAV); "" when nginx is not installed.
	webdavURL string
}

func (r *argoRun) name() string { return r.c.name() + "/" + r.backend + "/" + r.ctrl.Name }

// argoBackends are the executors every case runs on, under both images:
// k8sapi and kubelet, and emissary, Argo v3.3's default when its ConfigMap
// names none.
func argoBackends() []string { return []string{"k8sapi", "kubelet", "emissary"} }

func TestArgo(t *testing.T) {
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := framework.ArgoModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	for ex, why := range argoLeftOut {
		t.Logf("left out (network at run time): %s: %s", ex, why)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	runLabel := "argo-" + hex.EncodeToString(b)
	setup, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argos := map[string]*framework.Argo{}
	for _, c := range ctrls {
		a, err := framework.NewArgo(setup, c, runLabel)
		if err != nil {
			t.Fatal(err)
		}
		argos[c.Name] = a
		t.Logf("controller %s: namespace %s, executor image %s", c.Name, c.Namespace, c.Image)
		t.Cleanup(func() {
			if os.Getenv("ARGOEXEC_E2E_ARGO_KEEP") == "1" {
				t.Logf("keeping the workflows labelled %s=%s in %s", framework.LabelE2E, runLabel, c.Namespace)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.DeleteRun(ctx); err != nil {
				t.Logf("deleting the run's workflows in %s: %v", c.Namespace, err)
			}
		})
	}

	httpURL := argoHTTPServer(t)
	var webdavURL string
	if nginxBinary() != "" {
		webdavURL = startWebDAV(t, framework.LoadEnv().KubeletHost)
	}
	var runs []*argoRun
	for _, c := range argoCases {
		for _, backend := range argoBackends() {
			if !c.on(backend) {
				continue
			}
			for _, ctrl := range ctrls {
				runs = append(runs, &argoRun{c: c, backend: backend, ctrl: ctrl, httpURL: httpURL, webdavURL: webdavURL})
			}
		}
	}
	// Argo v3.3's controller requeues a workflow every 10 s: run several at once.
	parallel := 8
	if v, err := strconv.Atoi(os.Getenv("ARGOEXEC_E2E_ARGO_PARALLEL")); err == nil && v > 0 {
		parallel = v
	}
	sem := make(chan struct{}, parallel)
	t0 := time.Now()
	var wg sync.WaitGroup
	// The negative case mostly waits: it runs beside the pool, outside its limit.
	for _, ctrl := range ctrls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run("docker-on-containerd/"+ctrl.Name, func(t *testing.T) { runArgoDockerNegative(t, argos[ctrl.Name]) })
		}()
	}
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(r.name(), func(t *testing.T) { runArgoCase(t, argos[r.ctrl.Name], mod, r) })
		}()
	}
	wg.Wait()
	t.Logf("%d workflows in %s, %d at a time", len(runs), time.Since(t0).Round(time.Second), parallel)

	if len(ctrls) < 2 {
		return
	}
	// Same phase and outputs under both executor images, per case and backend.
	byKey := map[string]map[string]*argoRun{}
	for _, r := range runs {
		k := r.c.name() + "/" + r.backend
		if byKey[k] == nil {
			byKey[k] = map[string]*argoRun{}
		}
		byKey[k][r.ctrl.Name] = r
	}
	for _, c := range argoCases {
		for _, backend := range argoBackends() {
			pair := byKey[c.name()+"/"+backend]
			up, ours := pair["upstream"], pair["ours"]
			t.Run("same/"+c.name()+"/"+backend, func(t *testing.T) {
				if !c.on(backend) {
					t.Skipf("not run on %s: Argo's controller refuses it for the exec backends alone", backend)
				}
				if c.upstreamFails != "" && backend != "emissary" {
					t.Skipf("Argo's own argoexec fails this by design: %s", c.upstreamFails)
				}
				if c.upstreamDiffers != "" {
					t.Skipf("Argo's own argoexec ends this otherwise by design: %s", c.upstreamDiffers)
				}
				if up == nil || ours == nil || !up.ran || !ours.ran {
					t.Skip("not run in both (-run)")
				}
				if up.outcome == nil || ours.outcome == nil {
					t.Fatalf("a run did not finish: upstream %v, ours %v", up != nil && up.outcome != nil, ours != nil && ours.outcome != nil)
				}
				if diff := cmp.Diff(up.outcome.Fingerprint(c.random), ours.outcome.Fingerprint(c.random)); diff != "" {
					t.Errorf("Argo's own argoexec (-) and ours (+) disagree:\n%s", diff)
				}
			})
		}
	}
}

func runArgoCase(t *testing.T, a *framework.Argo, mod string, r *argoRun) {
	r.ran = true
	c := r.c
	var wf *unstructured.Unstructured
	var err error
	if c.gcs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := a.Env.EnsureGCSBucket(ctx, argoGCSBucket)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if c.webdav && r.webdavURL == "" {
		t.Fatal("nginx is not installed, so the artifactory cases have no WebDAV server: hack/deps.sh installs Debian's nginx-light")
	}
	if c.urls != nil {
		wf, err = localURLsVariant(c.manifest, filepath.Join(mod, "examples", c.example+".yaml"), r.httpURL, c.urls)
	} else if c.manifest != "" {
		wf, err = framework.ParseWorkflow([]byte(manifestVars(t, a, r).Replace(c.manifest)))
	} else {
		wf, err = framework.LoadWorkflow(filepath.Join(mod, "examples", c.example+".yaml"))
	}
	if err != nil {
		t.Fatal(err)
	}
	// emissary copies outputs from main's own filesystem: it runs the examples unchanged.
	if c.emptyDir && r.backend == "emissary" {
		t.Log("emissary: the example runs unchanged (its outputs stay in the image's own filesystem)")
	}
	if c.emptyDir && r.backend != "emissary" {
		mounted, err := framework.EmptyDirVariant(wf)
		if err != nil || len(mounted) == 0 {
			t.Fatalf("emptyDir variant of %s: mounted %v, %v", c.example, mounted, err)
		}
		t.Logf("emptyDir variant: mounted at %v", mounted)
	}
	ctx, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
	defer cancel()
	if c.setup != nil {
		c.setup(t, a)
	}
	start := time.Now()
	created, err := a.Submit(ctx, wf, r.backend)
	if err != nil {
		t.Fatalf("submit %s: %v", c.example, err)
	}
	var agent *agentSeen
	if c.urls != nil {
		agentCtx, stopAgent := context.WithCancel(ctx)
		agent = watchAgent(agentCtx, a, created.GetName())
		defer func() { stopAgent(); agent.wait() }()
	}
	final, err := a.WaitForWorkflow(ctx, created.GetName())
	r.took = time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	o, err := a.Collect(ctx, final)
	switch {
	case err != nil && c.upstreamDiffers != "" && r.ctrl.Name == "upstream":
		// an output Argo's own argoexec reported but failed to store, say
		t.Logf("collecting %s (Argo's own argoexec, not judged): %v", final.GetName(), err)
	case err != nil:
		t.Errorf("collecting %s: %v", final.GetName(), err)
	}
	r.outcome = o
	t.Logf("%s: workflow %s/%s: %s in %s (controller: %s); executor images %v", r.name(),
		a.Controller.Namespace, o.Name, o.Phase, r.took.Round(100*time.Millisecond), o.Duration, keysBool(o.ExecutorImages))
	defer func() {
		if t.Failed() {
			t.Log(a.Describe(context.Background(), o))
		}
	}()

	if c.upstreamDiffers != "" && r.ctrl.Name == "upstream" {
		t.Logf("Argo's own argoexec: workflow %s in %s (%q), not judged: %s", o.Phase, r.took.Round(100*time.Millisecond), o.Message, c.upstreamDiffers)
		for _, n := range o.Nodes {
			if n.Type == "Pod" {
				t.Logf("Argo's own argoexec: node %s %s: %q", n.DisplayName, n.Phase, n.Message)
			}
		}
		if c.upstreamCheck != nil {
			c.upstreamCheck(t, o)
		}
		return
	}
	expectFailure := c.upstreamFails != "" && r.ctrl.Name == "upstream" && r.backend != "emissary"
	want := c.wantPhase
	if expectFailure {
		want = c.upstreamPhase
		t.Logf("expected failure with Argo's own argoexec: %s", c.upstreamFails)
	}
	if o.Phase != want {
		t.Fatalf("workflow %s: phase %s (%q), want %s", o.Name, o.Phase, o.Message, want)
	}
	if expectFailure && !strings.Contains(o.Message, c.upstreamMessage) {
		t.Errorf("workflow %s: message %q, want the expected failure's %q", o.Name, o.Message, c.upstreamMessage)
	}
	if c.refused != "" {
		if !strings.Contains(o.Message, c.refused) || !strings.Contains(o.Message, r.backend+" executor does not support outputs from base image layer") {
			t.Errorf("refusal message %q, want %q for %s", o.Message, c.refused, r.backend)
		}
		if len(o.ExecutorImages) != 0 {
			t.Errorf("refused workflow ran pods with %v", keysBool(o.ExecutorImages))
		}
		return
	}
	if agent != nil {
		checkAgent(t, agent, r.ctrl)
	} else if len(o.ExecutorImages) != 1 || !o.ExecutorImages[r.ctrl.Image] {
		t.Errorf("executor images %v, want only %s", keysBool(o.ExecutorImages), r.ctrl.Image)
	}
	if expectFailure {
		return // the failure is the expected outcome; the outputs checks are for a passing run
	}
	if c.check != nil {
		c.check(t, o)
	}
}

// manifestVars replaces a case manifest's placeholders: @GCS_HOST@, @WEBDAV_URL@, @S3_HOST@ and
// @S3_BUCKET@ (argoCase.gcs and argoCase.webdav say what they are), @NODE_IP@, the node's IP
// (a port nothing listens on there is an unreachable server), and @HTTP_URL@, the local HTTP
// server's base URL (argoHTTPServer).
func manifestVars(t *testing.T, a *framework.Argo, r *argoRun) *strings.Replacer {
	t.Helper()
	vars := []string{"@GCS_HOST@", a.Env.GCSHost, "@WEBDAV_URL@", r.webdavURL, "@NODE_IP@", a.Env.KubeletHost, "@HTTP_URL@", r.httpURL}
	if strings.Contains(r.c.manifest, "@S3_") {
		u, err := url.Parse(a.Env.S3Endpoint)
		if err != nil {
			t.Fatalf("S3 endpoint %q: %v", a.Env.S3Endpoint, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		bucket, err := a.RepositoryBucket(ctx)
		if err != nil {
			t.Fatal(err)
		}
		vars = append(vars, "@S3_HOST@", u.Host, "@S3_BUCKET@", bucket)
	}
	return strings.NewReplacer(vars...)
}

func keysBool(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The negative case: `containerRuntimeExecutor: docker` (the ConfigMap's docker selector) on this
// node, which runs its pods on containerd. Argo mounts the host's /var/run/docker.sock into wait;
// the testbed has a dockerd there, and none of the pod's containers are on it. The workflow gives
// its pod the socket's group (spec.securityContext.supplementalGroups), as a docker-executor user
// would, so wait can open the socket whatever user the image runs as.
const argoDockerWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: docker-on-containerd-
spec:
  entrypoint: main
  securityContext: {supplementalGroups: [%d]}
  templates:
  - name: main
    container:
      image: alpine:3.7
      command: [sh, -c, "echo hello"]
`

// argoDockerUpstreamWatch is how long Argo's own argoexec is watched before the test deletes
// its workflow: past our find timeout (60 s) and a controller requeue (10 s).
const argoDockerUpstreamWatch = 90 * time.Second

func runArgoDockerNegative(t *testing.T, a *framework.Argo) {
	var st syscall.Stat_t
	if err := syscall.Stat(a.Env.DockerSock, &st); err != nil {
		t.Fatalf("docker socket %s: %v (hack/cluster.sh starts dockerd)", a.Env.DockerSock, err)
	}
	wf, err := framework.ParseWorkflow([]byte(fmt.Sprintf(argoDockerWorkflow, st.Gid)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
	defer cancel()
	start := time.Now()
	created, err := a.Submit(ctx, wf, "docker")
	if err != nil {
		t.Fatal(err)
	}
	name := created.GetName()
	defer func() {
		if err := a.DeleteWorkflow(context.Background(), name); err != nil {
			t.Logf("deleting %s: %v", name, err)
		}
	}()

	if a.Controller.Name == "upstream" {
		// Argo's docker executor polls `docker ps` (every second; its image has no docker CLI,
		// which it logs once) and waits for ever: still Running, wait still running, after 90 s.
		wctx, wcancel := context.WithTimeout(ctx, argoDockerUpstreamWatch)
		final, err := a.WaitForWorkflow(wctx, name)
		wcancel()
		if err == nil {
			phase, _, _ := unstructured.NestedString(final.Object, "status", "phase")
			t.Fatalf("Argo's own argoexec finished %s in %s: phase %s; want it still running (it polls docker ps forever)", name, time.Since(start).Round(time.Second), phase)
		}
		pods, err := a.WorkflowPods(ctx, name)
		if err != nil || len(pods) != 1 {
			t.Fatalf("pods of %s: %d, %v", name, len(pods), err)
		}
		p := &pods[0]
		var waitRunning bool
		var mainState string
		for _, cs := range p.Status.ContainerStatuses {
			switch cs.Name {
			case "wait":
				waitRunning = cs.State.Running != nil
			case "main":
				mainState = framework.DescribeStatuses(&corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}}})
			}
		}
		if !waitRunning {
			t.Errorf("pod %s: wait not running after %s: %s", p.Name, argoDockerUpstreamWatch, framework.DescribeStatuses(p))
		}
		log, _ := a.PodLog(ctx, p.Name, "wait")
		if !strings.Contains(log, "docker ps") {
			t.Errorf("wait log of %s has no `docker ps`:\n%s", p.Name, log)
		}
		var lines []string
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "docker") {
				lines = append(lines, l)
			}
		}
		t.Logf("Argo's own argoexec, docker executor on containerd: %s still %s after %s, pod %s (main: %s), wait running; its wait log on docker:\n%s",
			name, p.Status.Phase, time.Since(start).Round(time.Second), p.Name, mainState, strings.Join(lines, "\n"))
		return
	}

	final, err := a.WaitForWorkflow(ctx, name)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("ours did not fail the docker step: %v", err)
	}
	o, err := a.Collect(ctx, final)
	if err != nil {
		t.Logf("collecting %s: %v", name, err)
	}
	n := o.Node("WF")
	if n == nil {
		t.Fatalf("no node in %s", name)
	}
	if o.Phase != "Error" && o.Phase != "Failed" || n.Phase != o.Phase {
		t.Errorf("workflow %s phase %s, node %s; want both Error or Failed", name, o.Phase, n.Phase)
	}
	pods, _ := a.WorkflowPods(ctx, name)
	podName := name
	if len(pods) == 1 {
		podName = pods[0].Name
	}
	for _, want := range []string{
		"not found within 1m0s",
		"no container labelled io.kubernetes.pod.namespace=" + a.Controller.Namespace + ",io.kubernetes.pod.name=" + podName,
		"io.kubernetes.container.name=main",
		"does this node run its pods on Docker",
	} {
		if !strings.Contains(n.Message, want) {
			t.Errorf("node message %q has no %q", n.Message, want)
		}
	}
	t.Logf("ours, docker executor on containerd: workflow %s %s in %s; node message: %s", name, o.Phase, took.Round(time.Second), n.Message)
}
