//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// Resource and data templates under Argo v3.3.8's own controller, which runs the executor image
// as their main container (`argoexec resource ACTION`, `argoexec data JSON`).
//
// k8s-jobs.yaml is taken from the module with one change: its Job runs `perl`, an image the
// testbed does not build (no registry is reachable), so the Job's container becomes alpine:3.7
// printing a number (success) or exiting 1 (the failure condition, status.failed > 3, after the
// Job's backoffLimit of 4). Only "ours" runs it: the testbed's image of Argo's own argoexec has
// no kubectl, which Argo's `argoexec resource` shells out to.
//
// data-transformations.yaml runs unchanged on both images: its source names bucket my-bucket
// without an endpoint or key, so Argo relocates it onto the controller's artifact repository and
// lists that whole bucket; the test first puts a main.log object there so that the filter and
// the fan-out (withParam) have something to find.

// jobsRole lets the namespace's default service account (the examples set none) run the Job
// and read it back: create, get, and list/watch for argoexec's watch (Argo's polls with get).
func jobsRole(ns string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	name := "e2e-resource-jobs"
	return &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"batch"}, Resources: []string{"jobs"},
				Verbs: []string{"create", "get", "list", "watch", "delete", "patch"}}},
		}, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}},
		}
}

func grantJobs(ctx context.Context, t *testing.T, a *framework.Argo) {
	t.Helper()
	role, binding := jobsRole(a.Controller.Namespace)
	if _, err := a.Client.RbacV1().Roles(role.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create Role %s: %v", role.Name, err)
	}
	if _, err := a.Client.RbacV1().RoleBindings(binding.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create RoleBinding %s: %v", binding.Name, err)
	}
}

// jobVariant replaces the Job's perl container in k8s-jobs.yaml by alpine:3.7 running script.
func jobVariant(t *testing.T, wf *unstructured.Unstructured, script string) {
	t.Helper()
	templates, _, _ := unstructured.NestedSlice(wf.Object, "spec", "templates")
	tm := templates[0].(map[string]any)
	manifest, _, _ := unstructured.NestedString(tm, "resource", "manifest")
	var job map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &job); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(job, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	c["image"], c["command"] = "alpine:3.7", []any{"sh", "-c", script}
	c["imagePullPolicy"] = "IfNotPresent"
	if err := unstructured.SetNestedSlice(job, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(tm, string(b), "resource", "manifest"); err != nil {
		t.Fatal(err)
	}
	templates[0] = tm
	if err := unstructured.SetNestedSlice(wf.Object, templates, "spec", "templates"); err != nil {
		t.Fatal(err)
	}
}

// runOne submits wf on backend and returns its outcome; it checks that every pod's main
// container ran the controller's executor image.
func runOne(t *testing.T, a *framework.Argo, wf *unstructured.Unstructured, backend string) *framework.WorkflowOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
	defer cancel()
	created, err := a.Submit(ctx, wf, backend)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	final, err := a.WaitForWorkflow(ctx, created.GetName())
	if err != nil {
		t.Fatal(err)
	}
	o, err := a.Collect(ctx, final)
	if err != nil {
		t.Fatalf("collect %s: %v", final.GetName(), err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(a.Describe(context.Background(), o))
		}
	})
	pods, err := a.WorkflowPods(ctx, created.GetName())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if c.Name == "main" && len(c.Command) > 1 && c.Command[0] == "argoexec" && c.Image != a.Controller.Image {
				t.Errorf("pod %s: main runs %s, want the executor image %s", p.Name, c.Image, a.Controller.Image)
			}
		}
	}
	return o
}

func TestArgoResourceTemplates(t *testing.T) {
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := framework.ArgoModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	runLabel := "argo-res-" + hex.EncodeToString(b)
	for _, c := range ctrls {
		t.Run(c.Name, func(t *testing.T) {
			setup, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
			defer cancel()
			a, err := framework.NewArgo(setup, c, runLabel)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.DeleteRun(context.Background()) })
			grantJobs(setup, t, a)
			for _, backend := range []string{"k8sapi", "kubelet"} {
				for _, tc := range []struct {
					name, script, phase string
				}{
					{name: "succeeds", script: "echo 3.14159", phase: "Succeeded"},
					{name: "failure-condition", script: "exit 1", phase: "Failed"},
				} {
					t.Run(backend+"/"+tc.name, func(t *testing.T) {
						t.Parallel()
						wf, err := framework.LoadWorkflow(filepath.Join(mod, "examples", "k8s-jobs.yaml"))
						if err != nil {
							t.Fatal(err)
						}
						jobVariant(t, wf, tc.script)
						o := runOne(t, a, wf, backend)
						if o.Phase != tc.phase {
							t.Fatalf("workflow %s: phase %s (%q), want %s", o.Name, o.Phase, o.Message, tc.phase)
						}
						n := mustNode(t, o, "WF", tc.phase) // the root node; Collect names the workflow WF
						if tc.phase == "Failed" {
							// Ours quotes the condition as written; Argo's argoexec prints its parsed form
							// ('{status.failed gt [3]}').
							if !strings.Contains(n.Message, "failure condition '") || !strings.Contains(n.Message, "status.failed") || !strings.Contains(n.Message, "evaluated true") {
								t.Errorf("node message %q, want the failure condition named", n.Message)
							}
							return
						}
						name := n.Parameters["job-name"]
						if !strings.HasPrefix(name, "pi-job-") {
							t.Errorf("job-name = %q, want the created Job's name (jsonPath {.metadata.name})", name)
						}
						var job map[string]any
						if err := json.Unmarshal([]byte(n.Parameters["job-obj"]), &job); err != nil || job["kind"] != "Job" {
							t.Errorf("job-obj = %q (%v), want the Job as compact JSON (jqFilter .)", n.Parameters["job-obj"], err)
						}
						// JSON numbers decode as float64.
						if succeeded, _, _ := unstructured.NestedFloat64(job, "status", "succeeded"); succeeded < 1 {
							t.Errorf("job-obj status.succeeded = %v, want the object read after the success condition held", succeeded)
						}
					})
				}
			}
		})
	}
}

// artifactBucket is the controller's artifactRepository.s3.bucket.
func artifactBucket(ctx context.Context, t *testing.T, a *framework.Argo) string {
	t.Helper()
	cm, err := a.Client.CoreV1().ConfigMaps(a.Controller.Namespace).Get(ctx, "workflow-controller-configmap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var repo struct {
		S3 struct {
			Bucket string `json:"bucket"`
		} `json:"s3"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["artifactRepository"]), &repo); err != nil || repo.S3.Bucket == "" {
		t.Fatalf("artifactRepository.s3.bucket of %s: %q, %v", a.Controller.Namespace, repo.S3.Bucket, err)
	}
	return repo.S3.Bucket
}

func TestArgoDataTemplate(t *testing.T) {
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := framework.ArgoModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	runLabel := "argo-data-" + hex.EncodeToString(b)
	for _, c := range ctrls {
		t.Run(c.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
			defer cancel()
			a, err := framework.NewArgo(ctx, c, runLabel)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.DeleteRun(context.Background()) })
			bucket := artifactBucket(ctx, t, a)
			key := runLabel + "/" + c.Name + "/main.log"
			body := "log of " + key + "\n"
			if _, err := a.S3.PutObject(ctx, bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
				t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
			}
			t.Cleanup(func() { _ = a.S3.RemoveObject(context.Background(), bucket, key, minio.RemoveObjectOptions{}) })
			for _, backend := range []string{"k8sapi", "kubelet"} {
				t.Run(backend, func(t *testing.T) {
					file := filepath.Join(mod, "examples", "data-transformations.yaml")
					wf, err := framework.LoadWorkflow(file)
					if err != nil {
						t.Fatal(err)
					}
					// Unchanged, Argo's controller refuses it for k8sapi and kubelet before any
					// pod exists: list-log-files declares an output artifact at /file, which a
					// data template (no container of the user's) never writes.
					if o := runOne(t, a, wf, backend); o.Phase != "Failed" || !strings.Contains(o.Message, "does not support outputs from base image layer") {
						t.Fatalf("unchanged %s: phase %s (%q), want Argo's refusal of base-layer outputs", filepath.Base(file), o.Phase, o.Message)
					}
					// The variant drops that declaration and, since nothing then makes Argo's
					// controller give the template an archiveLocation, names the repository's
					// bucket in full in source.artifactPaths instead of `bucket: my-bucket`.
					// (Argo's validation then has nothing to refuse, and both executors list
					// the given prefix.)
					if wf, err = framework.LoadWorkflow(file); err != nil {
						t.Fatal(err)
					}
					loc := repositoryS3(ctx, t, a)
					loc["key"] = runLabel + "/" + c.Name // a location is whole with a key: list under this run's prefix
					dataVariant(t, wf, "list-log-files", loc)
					o := runOne(t, a, wf, backend)
					if o.Phase != "Succeeded" {
						t.Fatalf("workflow %s: phase %s (%q), want Succeeded", o.Name, o.Phase, o.Message)
					}
					n := mustNode(t, o, "list-log-files", "Succeeded")
					var keys []string
					if n.Result == nil || json.Unmarshal([]byte(*n.Result), &keys) != nil {
						t.Fatalf("list-log-files result %v, want a JSON list of keys", n.Result)
					}
					found := false
					for _, k := range keys {
						if !strings.HasSuffix(k, "main.log") {
							t.Errorf("result key %q does not end in main.log: the filter did not apply", k)
						}
						found = found || k == key
					}
					if !found {
						t.Errorf("result %s does not list s3://%s/%s", *n.Result, bucket, key)
					}
					ran := false
					for _, p := range o.NodesOf("process-logs") {
						if strings.Contains(p.MainLog, body) {
							ran = true
						}
					}
					if !ran {
						t.Errorf("no process-logs step printed %q: the fan-out over the result did not reach the key", body)
					}
				})
			}
		})
	}
}

// dataVariant removes the outputs of the named data template and sets its
// source.artifactPaths.s3 to loc.
func dataVariant(t *testing.T, wf *unstructured.Unstructured, name string, loc map[string]any) {
	t.Helper()
	templates, _, err := unstructured.NestedSlice(wf.Object, "spec", "templates")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i, raw := range templates {
		if m, ok := raw.(map[string]any); ok && m["name"] == name {
			delete(m, "outputs")
			if err := unstructured.SetNestedField(m, loc, "data", "source", "artifactPaths", "s3"); err != nil {
				t.Fatal(err)
			}
			templates[i], found = m, true
		}
	}
	if !found {
		t.Fatalf("no template %q", name)
	}
	if err := unstructured.SetNestedSlice(wf.Object, templates, "spec", "templates"); err != nil {
		t.Fatal(err)
	}
}

// repositoryS3 is the controller's artifactRepository.s3 (endpoint, bucket,
// region, insecure and the secrets), as an artifact location.
func repositoryS3(ctx context.Context, t *testing.T, a *framework.Argo) map[string]any {
	t.Helper()
	cm, err := a.Client.CoreV1().ConfigMaps(a.Controller.Namespace).Get(ctx, "workflow-controller-configmap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var repo struct {
		S3 map[string]any `json:"s3"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["artifactRepository"]), &repo); err != nil || repo.S3["bucket"] == nil {
		t.Fatalf("artifactRepository.s3 of %s: %v, %v", a.Controller.Namespace, repo.S3, err)
	}
	delete(repo.S3, "keyFormat")
	return repo.S3
}
