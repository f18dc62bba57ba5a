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
// The full role must pass. The agent's Role (manifests/argo/agent) is taken apart the same way
// (testAgentSubtraction): `argoexec agent main` serving a WorkflowTaskSet as Argo's controller
// makes one; a grant our agent does without on this API server is tried with client-go's
// list-then-watch path and with Argo's own agent, which the same Role serves.
// TestKubeletNodesPodsOnly is item 4: a token with nodes/pods get and
// no nodes/proxy can Wait and read status through the kubelet, and exec and logs are refused
// with the nodes/proxy grant they need named.
package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/executor/agent"
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
	t.Run("agent", func(t *testing.T) {
		t.Parallel()
		testAgentSubtraction(t, table)
	})
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

// agentRoleFile is the agent's Role and RoleBinding as shipped (manifests/argo/agent).
const agentRoleFile = "manifests/argo/agent/role.yaml"

// agentGrants lists every verb of every resource the agent's Role grants, with its API group
// (argoproj.io's workflowtasksets, the core group's secrets).
func agentGrants(t *testing.T) (*rbacv1.Role, []grant) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), agentRoleFile))
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.Role
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%s: %v", agentRoleFile, err)
		}
		if head.Kind == "Role" {
			role = &rbacv1.Role{}
			mustDecode(t, []byte(doc), role)
		}
	}
	if role == nil {
		t.Fatalf("%s has no Role", agentRoleFile)
	}
	var out []grant
	for _, rule := range role.Rules {
		for _, res := range rule.Resources {
			for _, v := range rule.Verbs {
				out = append(out, grant{Kind: "Role", Role: role.Name, Resource: res, Verb: v})
			}
		}
	}
	return role, out
}

// noWatchList makes client-go's reflector list and then watch, as it does against an API
// server without watch-list (sendInitialEvents).
var noWatchList = corev1.EnvVar{Name: "KUBE_FEATURE_WatchListClient", Value: "false"}

// all2 is everything an agent run said: its log and its messages.
func all2(r agentRun) string { return r.log + "\n" + r.message }

// argoNames reports whether text holds Argo v3.3.8's agent's refusal of g ("Watch
// workflowtasksets 403").
func argoNames(text string, g grant) bool {
	return strings.Contains(strings.ToLower(text), g.Verb+" "+g.Resource+" 403")
}

// forbids reports whether text holds the API server's refusal of g (`cannot list resource
// "workflowtasksets"`), as client-go's reflector logs it.
func forbids(text string, g grant) bool {
	return strings.Contains(text, `cannot `+g.Verb+` resource \"`+g.Resource+`\"`) || strings.Contains(text, `cannot `+g.Verb+` resource "`+g.Resource+`"`)
}

// testAgentSubtraction runs `argoexec agent main` (ours) as Argo's controller runs it for an
// HTTP template, with the agent's Role as shipped and without each of its grants in turn: the
// test makes the WorkflowTaskSet the controller would (one POST whose header comes from a
// Secret, to argoHTTPServer's /echo) and the agent pod, as the namespace's ServiceAccount
// default. With the full Role the node's result is patched Succeeded with the echoed body;
// without a grant it must not be, and the agent's log, its termination message or the node's
// message must name the verb and resource (ours, or the API server's refusal as client-go logs
// it). A grant whose removal changes nothing is to be removed from the manifest.
func testAgentSubtraction(t *testing.T, table *rbacTable) {
	role, grants := agentGrants(t)
	base := argoHTTPServer(t)
	upstream := ""
	if ctrls, err := framework.ArgoControllers(); err == nil {
		for _, c := range ctrls {
			if c.Name == "upstream" {
				upstream = c.Image
			}
		}
	}
	t.Run("full", func(t *testing.T) {
		t.Parallel()
		if r := runAgentRBAC(t, base, framework.LoadEnv().ExecutorImage, role, nil); !r.passed {
			t.Fatalf("our agent fails with its full Role; its log:\n%s\nmessages: %s", r.log, r.message)
		}
		if upstream != "" {
			if r := runAgentRBAC(t, base, upstream, role, nil); !r.passed {
				t.Fatalf("Argo's own agent (%s) fails with the full Role: its failures without a grant would prove nothing; its log:\n%s\nmessages: %s", upstream, r.log, r.message)
			}
		}
		table.add(rbacRow{"agent", "nothing", "passes (ours and Argo's own)", "", ""})
	})
	for _, g := range grants {
		t.Run(g.Verb+"-"+g.Resource, func(t *testing.T) {
			t.Parallel()
			row := rbacRow{backend: "agent", removed: g.String()}
			r := runAgentRBAC(t, base, framework.LoadEnv().ExecutorImage, role, without(g))
			all := all2(r)
			var listed string // ours, where the reflector lists first
			if r.passed {
				if nw := runAgentRBAC(t, base, framework.LoadEnv().ExecutorImage, role, without(g), noWatchList); !nw.passed {
					listed = all2(nw)
				}
			}
			switch {
			case r.passed && upstream == "":
				t.Errorf("without %s our agent still serves the HTTP templates, and no Argo image is configured to try (ARGOEXEC_E2E_ARGO_IMAGES): remove it from %s, or run with Argo's image", g, agentRoleFile)
				row.outcome, row.verdict = "passes (ours); Argo's own agent not tried", "REMOVE?"
			case r.passed && (names(listed, g) || forbids(listed, g)):
				// client-go's reflector lists, then watches, when the API server has no
				// watch-list (sendInitialEvents): KUBE_FEATURE_WatchListClient=false takes
				// that path here.
				row.outcome, row.verdict = "passes with ours on this API server (watch-list); fails where the reflector lists (KUBE_FEATURE_WatchListClient=false, an API server without watch-list)", "kept"
				for line := range strings.Lines(listed) {
					if names(line, g) || forbids(line, g) {
						row.text = strings.ReplaceAll(strings.TrimSpace(line), "|", `\|`)
						break
					}
				}
			case r.passed:
				// The Role serves Argo's own agent too (the argo tier runs both images with it).
				u := runAgentRBAC(t, base, upstream, role, without(g))
				uall := u.log + "\n" + u.message
				if u.passed {
					t.Errorf("without %s both our agent and Argo's own (%s) serve the HTTP templates: remove it from %s", g, upstream, agentRoleFile)
					row.outcome, row.verdict = "passes with both images", "REMOVE"
					break
				}
				row.outcome, row.verdict = "passes with ours; Argo's own agent ("+upstream+") fails", "kept (Argo's image)"
				for line := range strings.Lines(uall) {
					if forbids(line, g) || names(line, g) || argoNames(line, g) {
						row.text = strings.ReplaceAll(strings.TrimSpace(line), "|", `\|`)
						break
					}
				}
				if row.text == "" {
					t.Errorf("without %s Argo's own agent fails, but its log does not name %q on %q:\n%s", g, g.Verb, g.Resource, uall)
					row.verdict = "ERROR: not named"
				}
			case names(all, g):
				row.outcome, row.text, row.verdict = "fails", quoteLine(all, g), "kept"
			case forbids(all, g):
				row.outcome, row.verdict = "fails (the API server's refusal, as client-go logs it)", "kept"
				for line := range strings.Lines(all) {
					if forbids(line, g) {
						row.text = strings.ReplaceAll(strings.TrimSpace(line), "|", `\|`)
						break
					}
				}
			default:
				t.Errorf("without %s the agent does not serve the HTTP template, but nothing names %q on %q; log:\n%s\nmessage: %s", g, g.Verb, g.Resource, r.log, r.message)
				row.outcome, row.verdict = "fails", "ERROR: not named"
			}
			t.Logf("without %s: %s", g, row.outcome)
			table.add(row)
		})
	}
}

// agentRun is what one agent under a given Role left behind.
type agentRun struct {
	passed  bool   // the node's result was patched Succeeded with the echoed body
	log     string // the agent container's log
	message string // the node's message, and the container's termination message if it ended
}

// runAgentRBAC runs the agent pod and its taskset in a new namespace whose agent Role is role
// edited by edit (nil: as shipped), for at most agentRBACWindow.
func runAgentRBAC(t *testing.T, base, image string, role *rbacv1.Role, edit func(kind, name string, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule, env ...corev1.EnvVar) agentRun {
	t.Helper()
	f := framework.New(t, framework.PodSecurity("restricted"))
	ctx := f.Context()
	r := role.DeepCopy()
	r.Namespace = f.Namespace
	if edit != nil {
		r.Rules = edit("Role", r.Name, r.Rules)
	}
	if _, err := f.Client.RbacV1().Roles(f.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: r.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: f.Namespace}}}
	if _, err := f.Client.RbacV1().RoleBindings(f.Namespace).Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Client.CoreV1().Secrets(f.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "agent-header"},
		StringData: map[string]string{"token": "s3cr3t"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	restCfg, err := framework.RestConfig(f.Env)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	const name, node, node2 = "agent-rbac", "agent-rbac-1", "agent-rbac-2"
	ts := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskSet",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"tasks": map[string]any{node: map[string]any{"name": "post", "http": map[string]any{
			"method": "POST", "url": base + "/echo", "body": "ping",
			"headers":          []any{map[string]any{"name": "X-Token", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "agent-header", "key": "token"}}}},
			"successCondition": `response.body == "POST ping token=s3cr3t"`,
		}}}},
	}}
	tasksets := dyn.Resource(agent.TaskSetResource()).Namespace(f.Namespace)
	if _, err := tasksets.Create(ctx, ts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create WorkflowTaskSet: %v", err)
	}
	no, yes, uid := false, true, int64(8737)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-agent"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: "default",
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullNever,
			Command: []string{"argoexec", "agent", "main"},
			// As Argo's controller sets them for an agent without executor plugins.
			Env: []corev1.EnvVar{{Name: wf.EnvWorkflowName, Value: name}, {Name: wf.EnvArgoAgentPatchRate, Value: "1s"},
				{Name: wf.EnvArgoPluginNames, Value: "[]"}, {Name: wf.EnvArgoPluginAddresses, Value: "[]"}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
	}}
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, env...)
	if _, err := f.Client.CoreV1().Pods(f.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the agent pod: %v", err)
	}
	// The first task is in the taskset when the agent starts (its list, or the watch's initial
	// events); the second is added once the first is served, as Argo's controller adds a
	// workflow's later HTTP nodes: only a watch sees it.
	var out agentRun
	deadline := time.Now().Add(agentRBACWindow)
	served := map[string]bool{}
	failed := false
	for !failed && time.Now().Before(deadline) && ctx.Err() == nil {
		got, err := tasksets.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, id := range []string{node, node2} {
				phase, _, _ := unstructured.NestedString(got.Object, "status", "nodes", id, "phase")
				msg, _, _ := unstructured.NestedString(got.Object, "status", "nodes", id, "message")
				result, _, _ := unstructured.NestedString(got.Object, "status", "nodes", id, "outputs", "result")
				if phase != "" && !served[id] {
					served[id] = true
					out.message += msg + "\n"
					failed = failed || phase != "Succeeded" || result != "POST ping token=s3cr3t"
				}
			}
			if served[node] && !served[node2] && got.Object["spec"].(map[string]any)["tasks"].(map[string]any)[node2] == nil {
				tasks := got.Object["spec"].(map[string]any)["tasks"].(map[string]any)
				tasks[node2] = tasks[node]
				if _, err := tasksets.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
					t.Logf("add the second task: %v (retrying)", err)
				}
			}
			if served[node] && served[node2] {
				out.passed = !failed
				break
			}
		}
		p, err := f.Client.CoreV1().Pods(f.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Terminated != nil {
					out.message += cs.State.Terminated.Message
				}
			}
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if rc, err := f.Client.CoreV1().Pods(f.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).Stream(ctx); err == nil {
		b, _ := io.ReadAll(rc)
		rc.Close()
		out.log = string(b)
	}
	return out
}

// agentRBACWindow is how long an agent has to patch its node's result: with the full Role it
// takes a second or two (the patch rate is 1 s).
const agentRBACWindow = 40 * time.Second
