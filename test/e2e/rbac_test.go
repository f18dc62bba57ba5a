//go:build e2e

// RBAC proven minimal (issue 15, items 3 and 4). TestRBACSubtraction takes each verb of each
// resource of each Role and ClusterRole that manifests/overlays/<backend> grants away in turn,
// read from the manifests themselves (a rule added later is covered without a change here),
// runs one step under what is left, each in its own namespace and service account, and says
// what happened:
//
//   - fails: the step fails and both wait's log and its termination message name exactly that
//     verb and resource (the error says what to grant);
//   - degraded: the step passes and wait's log warns, naming that verb and resource (nodes/proxy
//     create: exec falls back to WebSocket);
//   - subsumed: the step passes because another grant includes it on this cluster (rbacSubsumed
//     says which); taking both away must then fail naming this one;
//   - anything else is an error: a grant whose removal changes nothing is to be removed from
//     the manifests.
//
// The full role must pass. TestKubeletNodesPodsOnly is item 4: a token with nodes/pods get and
// no nodes/proxy can Wait and read status through the kubelet, and exec and logs are refused
// with the nodes/proxy grant they need named.
package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/kubelet"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// grant is one verb on one resource that a Role or ClusterRole of an overlay grants.
type grant struct {
	Kind, Role string // Role or ClusterRole, and its name in the overlay
	Resource   string // resource[/subresource], core group
	Verb       string
}

func (g grant) String() string { return g.Verb + " " + g.Resource + " (" + g.Kind + " " + g.Role + ")" }

// key is resource:verb, as rbacSubsumed spells it.
func (g grant) key() string { return g.Resource + ":" + g.Verb }

// rbacSubsumed maps a grant to the grant that includes it on this cluster, and why. Only
// these may pass when taken away alone.
var rbacSubsumed = map[string]struct{ by, why string }{
	// The kubelet authorises GET /pods as nodes/pods and, when that is denied, as nodes/proxy
	// (KEP-2862; pkg/kubelet/server/auth.go): while nodes/proxy get is held for /containerLogs
	// and WebSocket exec, nodes/pods get adds nothing; it is what /pods needs without it
	// (TestKubeletNodesPodsOnly).
	"nodes/pods:get": {by: "nodes/proxy:get", why: "the kubelet authorises /pods as nodes/pods, then nodes/proxy"},
}

// rbacUntested names, per "backend resource:verb", a grant that the step cannot exercise on
// that backend, and why; it is kept, and the removal is reported as untested.
var rbacUntested = map[string]string{
	// PodReporter patches first and reads the pod only when the API server refuses the patch
	// as over the annotation budget, to cut a long script result to what the pod's other
	// annotations leave; the docker step runs on dockerd with no script result and no template
	// annotation (the k8sapi and kubelet steps print a long result and exercise it).
	"docker pods:get": "the report reads the pod only to fit a long script result, which the docker step has not",
}

// overlayGrants renders manifests/overlays/<backend> and lists every verb of every resource of
// its Roles and ClusterRoles.
func overlayGrants(t *testing.T, backend string) []grant {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot(), "manifests", "overlays", backend))
	if err != nil {
		t.Fatalf("kustomize build manifests/overlays/%s: %v", backend, err)
	}
	var out []grant
	for _, r := range res.Resources() {
		kind := r.GetKind()
		if kind != "Role" && kind != "ClusterRole" {
			continue
		}
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole // a Role's fields are a subset
		mustDecode(t, data, &role)
		for _, rule := range role.Rules {
			if !slices.Equal(rule.APIGroups, []string{""}) || len(rule.NonResourceURLs) > 0 {
				t.Fatalf("overlay %s: %s %s: rule %+v is outside the core group; teach overlayGrants its resource names", backend, kind, role.Name, rule)
			}
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					out = append(out, grant{Kind: kind, Role: role.Name, Resource: res, Verb: v})
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("overlay %s grants nothing", backend)
	}
	return out
}

// without returns a framework.ApplyOverlayWith edit that takes gs away: each rule is split into one rule
// per resource, less the verbs taken away; a rule left without verbs is dropped.
func without(gs ...grant) func(kind, name string, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	return func(kind, name string, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, rule := range rules {
			for _, res := range rule.Resources {
				var verbs []string
				for _, v := range rule.Verbs {
					if !slices.Contains(gs, grant{Kind: kind, Role: name, Resource: res, Verb: v}) {
						verbs = append(verbs, v)
					}
				}
				if len(verbs) > 0 {
					r := rule
					r.Resources, r.Verbs = []string{res}, verbs
					out = append(out, r)
				}
			}
		}
		return out
	}
}

// names reports whether text names g's verb and resource as the errors and warnings of
// argoexec do: `"get" on "pods/log"`, `verb "get" on resource nodes/pods`, quotes escaped or
// not (logrus quotes a message that holds them).
func names(text string, g grant) bool {
	q := `(\\?")?`
	re := regexp.MustCompile(q + regexp.QuoteMeta(g.Verb) + q + ` on (resource )?` + q + regexp.QuoteMeta(g.Resource) + `(\\?"|[\s;,.:)]|$)`)
	return re.MatchString(text)
}

// rbacStep is what one step under a given RBAC left behind.
type rbacStep struct {
	passed  bool   // the step succeeded with its outputs
	message string // wait's termination message ("" on the docker backend: no pod runs it)
	log     string // wait's log
}

// rbacRow is one line of the subtraction table.
type rbacRow struct{ backend, removed, outcome, text, verdict string }

// rbacTable collects the rows of the subtests.
type rbacTable struct {
	mu   sync.Mutex
	rows []rbacRow
}

func (tb *rbacTable) add(r rbacRow) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, r)
}

func (tb *rbacTable) String() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	slices.SortFunc(tb.rows, func(a, b rbacRow) int { return strings.Compare(a.backend+a.removed, b.backend+b.removed) })
	var b strings.Builder
	b.WriteString("| backend | removed | outcome | error / warning | verdict |\n|---|---|---|---|---|\n")
	for _, r := range tb.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.backend, r.removed, r.outcome, r.text, r.verdict)
	}
	return b.String()
}

// TestRBACSubtraction: see the file comment. Each case runs in its own namespace, in parallel
// (go test -parallel bounds how many at once).
func TestRBACSubtraction(t *testing.T) {
	table := &rbacTable{}
	t.Cleanup(func() { t.Logf("RBAC subtraction:\n%s", table) })
	for _, backend := range []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet, wf.ExecutorDocker} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			grants := overlayGrants(t, backend)
			t.Run("full", func(t *testing.T) {
				t.Parallel()
				if r := runRBACStep(t, backend, nil); !r.passed {
					t.Fatalf("the step fails with the overlay's full RBAC; wait's log:\n%s", r.log)
				}
				table.add(rbacRow{backend, "nothing", "passes", "", ""})
			})
			for _, g := range grants {
				t.Run(g.Verb+"-"+g.Resource, func(t *testing.T) {
					t.Parallel()
					table.add(checkRemoval(t, backend, g, grants))
				})
			}
		})
	}
}

// checkRemoval runs the step without g and says what that showed.
func checkRemoval(t *testing.T, backend string, g grant, all []grant) rbacRow {
	row := rbacRow{backend: backend, removed: g.String()}
	r := runRBACStep(t, backend, without(g))
	switch {
	case !r.passed:
		row.outcome, row.text, row.verdict = "fails", quoteLine(r.log, g), "kept"
		if !names(r.log, g) {
			t.Errorf("without %s the step fails, but wait's log does not name %q on %q:\n%s", g, g.Verb, g.Resource, r.log)
			row.verdict = "ERROR: not named in the log"
		}
		if backend != wf.ExecutorDocker && !names(r.message, g) {
			t.Errorf("without %s the step fails, but wait's termination message does not name %q on %q: %q", g, g.Verb, g.Resource, r.message)
			row.verdict = "ERROR: not named in the termination message"
		}
	case warns(r.log, g):
		row.outcome, row.text, row.verdict = "passes, degraded", quoteLine(warnings(r.log), g), "kept"
	case rbacUntested[backend+" "+g.key()] != "":
		row.outcome, row.verdict = "passes: "+rbacUntested[backend+" "+g.key()], "kept"
	default:
		sub, ok := rbacSubsumed[g.key()]
		if !ok {
			t.Errorf("without %s the step still passes and nothing names it: remove it from manifests/overlays/%s", g, backend)
			row.outcome, row.verdict = "passes", "REMOVE"
			break
		}
		i := slices.IndexFunc(all, func(o grant) bool { return o.key() == sub.by })
		if i < 0 {
			t.Fatalf("without %s the step passes; rbacSubsumed says %s includes it, which overlay %s does not grant", g, sub.by, backend)
		}
		r2 := runRBACStep(t, backend, without(g, all[i]))
		row.outcome = "passes (" + sub.why + "); without " + all[i].Verb + " " + all[i].Resource + " as well: fails"
		row.text, row.verdict = quoteLine(r2.log, g), "kept"
		if r2.passed || !names(r2.log, g) || !names(r2.message, g) {
			t.Errorf("without %s and %s the step passes or does not name %s; termination message %q, log:\n%s", g, all[i], g, r2.message, r2.log)
			row.verdict = "ERROR"
		}
	}
	t.Logf("without %s: %s", g, row.outcome)
	return row
}

// warnings is the lines of a logrus log at level warning.
func warnings(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=warning") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// warns reports whether log has a warning that names g.
func warns(log string, g grant) bool { return names(warnings(log), g) }

// quoteLine is the first line of log that names g, cut to its message; wait's final error
// (a line that is not a logrus record) first.
func quoteLine(log string, g grant) string {
	for line := range strings.Lines(log) {
		if names(line, g) && !strings.Contains(line, "level=") {
			return strings.ReplaceAll(strings.TrimSpace(line), "|", `\|`)
		}
	}
	for line := range strings.Lines(log) {
		if names(line, g) {
			line = strings.TrimSpace(line)
			if _, msg, ok := strings.Cut(line, "msg="); ok {
				line = msg
			}
			return strings.ReplaceAll(line, "|", `\|`)
		}
	}
	return ""
}

// runRBACStep runs one step of backend in a new namespace whose RBAC is the overlay's, edited
// by edit (nil: as shipped). The step uses every permission a wait can: the pod's status and
// Wait while main runs (status reads, and the exec fast path), an output parameter, the
// script's result (main's log), a sidecar stopped by wait (legacy sidecar mode: exec kill;
// native sidecars are stopped by the kubelet and need nothing), and the outputs report (a
// patch of the pod).
func runRBACStep(t *testing.T, backend string, edit func(kind, name string, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule) rbacStep {
	t.Helper()
	f := framework.New(t)
	framework.ApplyOverlayWith(t, f, backend, edit)
	cfg := config.Default()
	cfg.ContainerRuntimeExecutor = backend
	cfg.Executor.Image = f.Env.ExecutorImage
	cfg.Executor.ImagePullPolicy = corev1.PullNever
	cfg.Executor.Args = []string{"--loglevel=debug"}
	cfg.SidecarMode = wf.SidecarModeLegacy
	e := &wfEnv{f: f, backend: backend, cfg: cfg}
	if backend == wf.ExecutorDocker {
		return runRBACDockerStep(t, e)
	}
	vols, mounts := workVolume()
	tmpl := &wf.Template{Name: "rbac", Volumes: vols, Script: &wf.ScriptTemplate{
		Container: corev1.Container{Image: f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sh"}, VolumeMounts: mounts},
		// A result longer than the annotation budget: the report's first patch is refused
		// (422) and it reads the pod to cut the result to fit, so pods get is exercised too.
		Source: "sleep 2\necho 42 > /work/answer\nhead -c 307200 /dev/zero | tr '\\0' x\necho\necho done",
	}}
	tmpl.Sidecars = []wf.UserContainer{{Container: corev1.Container{Name: "side", Image: f.Env.BusyboxImage, ImagePullPolicy: corev1.PullNever,
		Command: []string{"sh", "-c", stopOnTERM}}}}
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "answer", ValueFrom: &wf.ValueFrom{Path: "/work/answer"}}}
	// Until wait exits: a sidecar that wait could not stop keeps the pod running.
	r := e.run(t, "rbac", tmpl, nil, true)
	out := rbacStep{log: r.waitLog}
	waitOK := false
	for _, cs := range r.pod.Status.ContainerStatuses {
		if cs.Name == wf.WaitContainerName && cs.State.Terminated != nil {
			out.message = cs.State.Terminated.Message
			waitOK = cs.State.Terminated.ExitCode == 0
		}
	}
	out.passed = waitOK && r.outputs != nil && r.outputs.Result != nil && strings.HasSuffix(*r.outputs.Result, "x\ndone") &&
		r.outputs.ResultTruncated && hasParam(r.outputs, "answer", "42")
	return out
}

// stopOnTERM is a sidecar that exits on SIGTERM (as PID 1 it needs a handler for that).
const stopOnTERM = `trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done`

// runRBACDockerStep is runRBACStep's step on the docker backend, run on dockerd as
// TestDockerWorkflow runs it (wait with a kubeconfig for the overlay's service account). Its
// failures reach wait's log and exit code; the container has no termination message.
func runRBACDockerStep(t *testing.T, e *wfEnv) rbacStep {
	t.Helper()
	tmpl := e.template("rbac", "")
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "answer", ValueFrom: &wf.ValueFrom{Path: "/work/answer"}}}
	s := newDockerStep(t, e, "rbac", tmpl)
	s.busybox(t, "main", "sleep 2; echo 42 > /work/answer")
	s.busybox(t, "side", stopOnTERM)
	s.wait(t, wf.SidecarModeLegacy)
	code, log, out := s.start(t, "side", "main", "wait")
	return rbacStep{log: log, passed: code == 0 && hasParam(out, "answer", "42")}
}

func hasParam(out *wf.NodeOutputs, name, value string) bool {
	if out == nil {
		return false
	}
	for _, p := range out.Parameters {
		if p.Name == name && p.Value != nil && string(*p.Value) == value {
			return true
		}
	}
	return false
}

// TestKubeletNodesPodsOnly (item 4): with fine-grained kubelet authorization (GA in Kubernetes
// 1.36; this cluster is v1.37), a token holding only nodes/pods get reads the pod's status
// through the kubelet's /pods, so Wait, GetExitCode and ListContainerNames work without
// nodes/proxy; exec and logs are refused, naming the nodes/proxy verb they need.
func TestKubeletNodesPodsOnly(t *testing.T) {
	f := framework.New(t)
	ctx := f.Context()
	pod := scriptPod(f, "pods-only", []executortest.Container{{Name: "main", Script: "echo hi > /data/hi; sleep 4; exit 3"}})
	kubeletStartPod(t, f, pod)
	token := kubeletToken(t, f, "pods-only", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/pods"}, Verbs: []string{"get"}}})
	x, err := kubelet.New(kubeletConfig(f, pod.Name, token), testLog(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The binding can take a moment to reach the API server's authorizer.
	var got []string
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		if got, err = x.ListContainerNames(ctx); err == nil || ctx.Err() != nil {
			break
		}
		t.Logf("retrying: %v", err)
		time.Sleep(delay)
	}
	if err != nil || !slices.Equal(got, []string{"main"}) {
		t.Fatalf("ListContainerNames with nodes/pods get only = %v, %v; want [main]", got, err)
	}
	sa := "system:serviceaccount:" + f.Namespace + ":pods-only"

	_, err = x.GetFileContents(ctx, "main", "/data/hi")
	t.Logf("GetFileContents with nodes/pods only: %v", err)
	kubeletWantStatus(t, err, http.StatusForbidden, sa, `verb "get" on resource nodes/proxy`, `"create"`, "/exec on every pod of the node")

	_, err = x.GetOutputStream(ctx, "main", true)
	t.Logf("GetOutputStream with nodes/pods only: %v", err)
	kubeletWantStatus(t, err, http.StatusForbidden, sa, `verb "get" on resource nodes/proxy`, "authorises /containerLogs as nodes/proxy only")

	// Wait's exec fast path is refused: it learns of main's exit from /pods.
	if err := x.Wait(ctx, []string{"main"}); err != nil {
		t.Fatalf("Wait with nodes/pods get only: %v", err)
	}
	code, err := x.GetExitCode(ctx, "main")
	if err != nil || code != 3 {
		t.Fatalf("GetExitCode with nodes/pods get only = %d, %v; want 3", code, err)
	}
}
