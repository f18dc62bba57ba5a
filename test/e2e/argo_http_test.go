//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// HTTP templates under Argo's controller: Argo's http-hello-world and http-success-condition
// examples, with their URLs pointed at a local server on the node IP (the only change), run by
// Argo's agent pod, which the controller builds from its executor image: Argo's own argoexec
// and ours, compared as every argo case is.

func init() {
	argoCases = append(argoCases,
		argoCase{example: "http-hello-world", only: "emissary", wantPhase: "Succeeded",
			urls: map[string]string{"https://raw.githubusercontent.com/": "/raw/", "http://openlibrary.org/": "/openlibrary/"},
			check: func(t *testing.T, o *framework.WorkflowOutcome) {
				good := mustNode(t, o, "good", "Succeeded")
				if good.Type != "HTTP" || good.Result == nil || *good.Result != swaggerStandIn {
					t.Errorf("good: type %s result %v, want HTTP with the response body", good.Type, good.Result)
				}
				bad := mustNode(t, o, "bad", "Failed")
				if bad.Message != "received non-2xx response code: 404" || bad.Result == nil || *bad.Result != notFoundBody {
					t.Errorf("bad: message %q result %v, want Argo's non-2xx failure with the body", bad.Message, bad.Result)
				}
			}},
		argoCase{example: "http-success-condition", only: "emissary", wantPhase: "Succeeded",
			urls: map[string]string{"http://httpstat.us/": "/httpstat/", "https://google.com": "/google"},
			check: func(t *testing.T, o *framework.WorkflowOutcome) {
				for name, body := range map[string]string{"http-status-is-201-succeeds": "201 Created", "http-body-contains-google-succeeds": googleBody} {
					n := mustNode(t, o, name, "Succeeded")
					if n.Result == nil || *n.Result != body {
						t.Errorf("%s: result %v, want %q", name, n.Result, body)
					}
				}
			}},
		// Not an Argo example: a POST with a body and a header from a Secret, judged by a
		// successCondition over the body, and one whose condition is false.
		argoCase{example: "http-secret-header", only: "emissary", wantPhase: "Succeeded", manifest: httpSecretHeaderWorkflow,
			urls: map[string]string{"http://local.invalid/": "/"}, setup: agentSecret,
			check: func(t *testing.T, o *framework.WorkflowOutcome) {
				n := mustNode(t, o, "post", "Succeeded")
				if n.Result == nil || *n.Result != "POST ping token=s3cr3t" {
					t.Errorf("post: result %v", n.Result)
				}
				f := mustNode(t, o, "condition-false", "Failed")
				if f.Message != "successCondition 'response.statusCode == 201' evaluated false" {
					t.Errorf("condition-false: message %q", f.Message)
				}
			}},
	)
}

const httpSecretHeaderWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: http-secret-header-
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: post
        template: post
      - name: condition-false
        template: condition-false
        continueOn: {failed: true}
  - name: post
    http:
      method: POST
      url: http://local.invalid/echo
      body: ping
      headers:
      - name: X-Token
        valueFrom: {secretKeyRef: {name: agent-e2e-token, key: token}}
      successCondition: 'response.statusCode == 200 && response.body == "POST ping token=s3cr3t"'
  - name: condition-false
    http:
      url: http://local.invalid/echo
      timeoutSeconds: 20
      successCondition: response.statusCode == 201
`

// agentSecret makes, in the controller's namespace, the Secret the http-secret-header case's
// header reads and a Role that lets the agent (ServiceAccount default) get it: Argo's own
// agent Role has no secrets get, and both images must run with the same grants.
func agentSecret(t *testing.T, a *framework.Argo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := a.Controller.Namespace
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "agent-e2e-token"}, StringData: map[string]string{"token": "s3cr3t"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "agent-e2e-token"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"agent-e2e-token"}, Verbs: []string{"get"}}}}
	bind := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-e2e-token"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "agent-e2e-token"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}}}
	for what, err := range map[string]error{
		"secret":      ignoreExists(a.Client.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{})),
		"role":        ignoreExists(a.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})),
		"rolebinding": ignoreExists(a.Client.RbacV1().RoleBindings(ns).Create(ctx, bind, metav1.CreateOptions{})),
	} {
		if err != nil {
			t.Fatalf("create the %s agent-e2e-token in %s: %v", what, ns, err)
		}
	}
}

// ignoreExists is the error of a create, nil when the object already exists.
func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// What the local server answers for the examples' URLs.
const (
	swaggerStandIn = `{"swagger":"2.0","info":{"title":"stand-in for Argo's generated.swagger.json (argoexec e2e)"}}`
	notFoundBody   = `{"error": "notfound"}`
	googleBody     = "<!doctype html><html><title>google</title></html>"
)

// argoHTTPServer serves, on the node IP (which pods reach, as they reach the S3 server), what
// the HTTP examples fetch: /raw/... (200, JSON), /openlibrary/... (404), /httpstat/CODE (that
// code) and /google (200, a page with "google"). It returns the server's base URL.
func argoHTTPServer(t *testing.T) string {
	t.Helper()
	host := framework.LoadEnv().KubeletHost
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on the node IP %s for the HTTP examples: %v", host, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/raw/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, swaggerStandIn)
	})
	mux.HandleFunc("/openlibrary/", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, notFoundBody)
	})
	mux.HandleFunc("/httpstat/201", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "201 Created")
	})
	mux.HandleFunc("/google", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, googleBody) })
	// /echo says what it got: method, body and the X-Token header.
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "%s %s token=%s", r.Method, b, r.Header.Get("X-Token"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the HTTP examples' server: %v", err)
		}
	})
	t.Cleanup(func() {
		_ = srv.Close()
		wg.Wait()
	})
	return "http://" + l.Addr().String()
}

// localURLsVariant is manifest, or when it is empty the example at path, with each key of urls
// (an external URL prefix) replaced by base followed by its value; each must occur.
func localURLsVariant(manifest, path, base string, urls map[string]string) (*unstructured.Unstructured, error) {
	s := manifest
	if s == "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		s = string(data)
	} else {
		path = "the case's manifest"
	}
	for from, to := range urls {
		if !strings.Contains(s, from) {
			return nil, fmt.Errorf("%s: no %q to point at the local server", path, from)
		}
		s = strings.ReplaceAll(s, from, base+to)
	}
	return framework.ParseWorkflow([]byte(s))
}

// agentSeen is what watchAgent saw of a workflow's agent pod: the controller deletes the pod
// when the workflow completes, so it is read while the workflow runs.
type agentSeen struct {
	mu        sync.Mutex
	pod       string
	images    map[string]bool // of its init and main containers
	initLog   string
	mainLog   string
	lastError error
	wg        sync.WaitGroup
}

func (s *agentSeen) wait() { s.wg.Wait() }

// watchAgent reads, every 200 ms until ctx ends, the agent pod of workflow name (labels
// workflows.argoproj.io/workflow and component=agent): its images and its containers' logs.
func watchAgent(ctx context.Context, a *framework.Argo, name string) *agentSeen {
	s := &agentSeen{images: map[string]bool{}}
	s.wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			pods, err := a.Client.CoreV1().Pods(a.Controller.Namespace).List(ctx, metav1.ListOptions{
				LabelSelector: "workflows.argoproj.io/workflow=" + name + ",workflows.argoproj.io/component=agent"})
			for _, p := range func() []string {
				if err != nil || pods == nil {
					return nil
				}
				var out []string
				for _, p := range pods.Items {
					s.mu.Lock()
					s.pod = p.Name
					for _, c := range append(append(p.Spec.InitContainers[:0:0], p.Spec.InitContainers...), p.Spec.Containers...) {
						s.images[c.Image] = true
					}
					s.mu.Unlock()
					out = append(out, p.Name)
				}
				return out
			}() {
				for _, c := range []string{"init", "main"} {
					log, lerr := a.PodLog(ctx, p, c)
					s.mu.Lock()
					if lerr == nil && c == "init" && len(log) > len(s.initLog) {
						s.initLog = log
					}
					if lerr == nil && c == "main" && len(log) > len(s.mainLog) {
						s.mainLog = log
					}
					if lerr != nil && ctx.Err() == nil {
						s.lastError = lerr
					}
					s.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return s
}

// checkAgent: the agent pod ran the controller's executor image, and that image's own argoexec:
// ours logs "argoexec agent main" first (with its version), Argo's "Starting Agent".
func checkAgent(t *testing.T, s *agentSeen, ctrl framework.ArgoController) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pod == "" {
		t.Fatalf("no agent pod was seen (last error: %v)", s.lastError)
	}
	if len(s.images) != 1 || !s.images[ctrl.Image] {
		t.Errorf("agent pod %s: images %v, want only the controller's executor image %s", s.pod, keysBool(s.images), ctrl.Image)
	}
	want, notWant := "argoexec agent main", "Starting Agent"
	if ctrl.Name == "upstream" {
		want, notWant = notWant, want
	}
	if !strings.Contains(s.mainLog, want) || strings.Contains(s.mainLog, notWant) {
		t.Errorf("agent pod %s: main's log does not say %q (it is %s's argoexec that must run):\n%s", s.pod, want, ctrl.Name, s.mainLog)
	}
	t.Logf("agent pod %s (%s): main's log:\n%s", s.pod, ctrl.Image, s.mainLog)
}
