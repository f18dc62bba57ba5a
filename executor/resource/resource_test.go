package resource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	goruntime "runtime"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

var (
	jobsGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	cmGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	wfGVR   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}
	nsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// discoveryResources is what the fake API server serves.
func discoveryResources() []*metav1.APIResourceList {
	verbs := metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}, Verbs: verbs},
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", ShortNames: []string{"cm"}, Verbs: verbs},
			{Name: "namespaces", SingularName: "namespace", Namespaced: false, Kind: "Namespace", ShortNames: []string{"ns"}, Verbs: verbs},
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{
			{Name: "jobs", SingularName: "job", Namespaced: true, Kind: "Job", Verbs: verbs},
		}},
		{GroupVersion: "argoproj.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "workflows", SingularName: "workflow", Namespaced: true, Kind: "Workflow", ShortNames: []string{"wf"}, Verbs: verbs},
		}},
	}
}

// recorder is an OutputReporter that keeps what it was given.
type recorder struct {
	mu      sync.Mutex
	reports []*wf.NodeOutputs
}

func (r *recorder) Report(_ context.Context, o *wf.NodeOutputs) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, o)
	return nil
}

type fixture struct {
	t        *testing.T
	client   *dynamicfake.FakeDynamicClient
	clock    *clocktesting.FakeClock
	reporter *recorder
	// watching receives a value each time a watch opens.
	watching chan schema.GroupVersionResource
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{
		jobsGVR: "JobList", cmGVR: "ConfigMapList", podsGVR: "PodList", wfGVR: "WorkflowList", nsGVR: "NamespaceList",
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	f := &fixture{t: t, client: client, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		reporter: &recorder{}, watching: make(chan schema.GroupVersionResource, 16)}
	// The API server names objects from generateName.
	n := 0
	client.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
		if obj.GetName() == "" && obj.GetGenerateName() != "" {
			n++
			obj.SetName(fmt.Sprintf("%sx%d", obj.GetGenerateName(), n))
		}
		return false, nil, nil
	})
	client.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		f.watching <- a.GetResource()
		return false, nil, nil
	})
	return f
}

func (f *fixture) executor(action string, tmpl *wf.Template) *Executor {
	disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: discoveryResources()}}
	log := logrus.New()
	log.SetOutput(io.Discard)
	return &Executor{
		Config:   Config{Action: action, Template: tmpl, PodName: "wf-1-pod", PodNamespace: "argo"},
		Client:   f.client,
		Mapper:   NewRESTMapper(disco, func(string) {}),
		Reporter: f.reporter,
		Clock:    f.clock,
		Log:      logrus.NewEntry(log),
	}
}

// run starts Run in a goroutine; the returned function waits for its error.
func (f *fixture) run(ctx context.Context, e *Executor) func() error {
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			f.t.Fatal("Run did not return within 30 s")
			return nil
		}
	}
}

// awaitWatch waits until a watch on gvr is open.
func (f *fixture) awaitWatch(gvr schema.GroupVersionResource) {
	f.t.Helper()
	for {
		select {
		case got := <-f.watching:
			if got == gvr {
				return
			}
		case <-time.After(30 * time.Second):
			f.t.Fatalf("no watch on %s opened within 30 s", gvr)
		}
	}
}

func (f *fixture) setStatus(gvr schema.GroupVersionResource, ns, name string, status map[string]any) {
	f.t.Helper()
	ri := f.client.Resource(gvr).Namespace(ns)
	obj, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	obj.Object["status"] = status
	if _, err := ri.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func obj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		o.Object[k] = v
	}
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

const jobManifest = `apiVersion: batch/v1
kind: Job
metadata:
  generateName: pi-job-
spec:
  template:
    spec:
      containers:
      - name: pi
        image: perl
      restartPolicy: Never
  backoffLimit: 4
`

// k8sJobs is Argo's examples/k8s-jobs.yaml template.
func k8sJobs() *wf.Template {
	return &wf.Template{
		Name:     "pi-tmpl",
		Resource: &wf.ResourceTemplate{Action: "create", SuccessCondition: "status.succeeded > 0", FailureCondition: "status.failed > 3", Manifest: jobManifest},
		Outputs: wf.Outputs{Parameters: []wf.Parameter{
			{Name: "job-name", ValueFrom: &wf.ValueFrom{JSONPath: "{.metadata.name}"}},
			{Name: "job-obj", ValueFrom: &wf.ValueFrom{JQFilter: "."}},
			{Name: "backoff", ValueFrom: &wf.ValueFrom{JQFilter: ".spec.backoffLimit, .metadata.name"}},
			{Name: "missing", ValueFrom: &wf.ValueFrom{JSONPath: "{.status.nothing}"}},
			{Name: "bad-with-default", ValueFrom: &wf.ValueFrom{JQFilter: ".metadata.name | tonumber", Default: wf.AnyStringPtr("dflt")}},
			{Name: "plain", Value: wf.AnyStringPtr("v"), GlobalName: "g"},
		}},
	}
}

func TestCreateJobWatchSuccessOutputs(t *testing.T) {
	f := newFixture(t)
	wait := f.run(context.Background(), f.executor("create", k8sJobs()))
	f.awaitWatch(jobsGVR)
	f.setStatus(jobsGVR, "argo", "pi-job-x1", map[string]any{"active": int64(1)})
	f.setStatus(jobsGVR, "argo", "pi-job-x1", map[string]any{"succeeded": int64(1)})
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(f.reporter.reports) != 1 {
		t.Fatalf("reports = %d, want 1", len(f.reporter.reports))
	}
	got := map[string]string{}
	for _, p := range f.reporter.reports[0].Parameters {
		v := "<nil>"
		if p.Value != nil {
			v = string(*p.Value)
		}
		got[p.Name] = v
	}
	job, err := f.client.Resource(jobsGVR).Namespace("argo").Get(context.Background(), "pi-job-x1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"job-name":         "pi-job-x1", // kubectl -o jsonpath: no newline
		"backoff":          "4\npi-job-x1\n",
		"missing":          "",
		"bad-with-default": "dflt",
		"plain":            "v",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("parameter %s = %q, want %q", k, got[k], v)
		}
	}
	if o := got["job-obj"]; !strings.HasPrefix(o, `{"apiVersion":"batch/v1","kind":"Job","metadata":{`) || !strings.HasSuffix(o, "}\n") || strings.Count(o, "\n") != 1 || !strings.Contains(o, `"succeeded":1`) {
		t.Errorf("job-obj = %q, want the whole job as compact JSON and one newline (jq -rc '.')", o)
	}
	if job.GetNamespace() != "argo" {
		t.Errorf("namespace = %q, want the pod's", job.GetNamespace())
	}
	if p := f.reporter.reports[0].Parameters[5]; p.GlobalName != "g" {
		t.Errorf("plain parameter not echoed as declared: %+v", p)
	}
	var create clienttesting.CreateActionImpl
	for _, a := range f.client.Actions() {
		if c, ok := a.(clienttesting.CreateActionImpl); ok {
			create = c
		}
	}
	if create.CreateOptions.FieldManager != DefaultFieldManager || create.CreateOptions.FieldValidation != metav1.FieldValidationStrict {
		t.Errorf("create options = %+v, want field manager argoexec, validation Strict", create.CreateOptions)
	}
}

func TestCreateJobFailureCondition(t *testing.T) {
	f := newFixture(t)
	wait := f.run(context.Background(), f.executor("create", k8sJobs()))
	f.awaitWatch(jobsGVR)
	f.setStatus(jobsGVR, "argo", "pi-job-x1", map[string]any{"failed": int64(4)})
	err := wait()
	var failed *FailedError
	if !errors.As(err, &failed) {
		t.Fatalf("Run = %v, want a FailedError", err)
	}
	if want := "job.batch/pi-job-x1 in namespace argo: failure condition 'status.failed>3' evaluated true"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if len(f.reporter.reports) != 0 {
		t.Errorf("a failed step reported outputs: %+v", f.reporter.reports)
	}
}

func TestConditions(t *testing.T) {
	for _, tc := range []struct {
		success, failure, obj string
		done                  bool
		failed                string
	}{
		{success: "status.succeeded > 0", obj: `{"status":{"succeeded":1}}`, done: true},
		{success: "status.succeeded > 0", obj: `{"status":{"succeeded":0}}`},
		{success: "status.succeeded > 0", obj: `{"status":{}}`},
		{success: "status.succeeded > 0", obj: `{"status":{"succeeded":"many"}}`},
		{success: "status.succeeded > 9", obj: `{"status":{"succeeded":10}}`, done: true},
		{success: "status.count < 10", obj: `{"status":{"count":9}}`, done: true},
		{success: "status.count < 10", obj: `{"status":{"count":1.5}}`}, // not a whole number: never matches
		{success: "status.succeeded = 2", obj: `{"status":{"succeeded":2}}`, done: true},
		{success: "status.phase == Succeeded", obj: `{"status":{"phase":"Succeeded"}}`, done: true},
		{success: "status.readyReplicas == 1", obj: `{"status":{"readyReplicas":1}}`, done: true},
		{success: "status.phase != Running", obj: `{"status":{}}`, done: true},
		{success: "status.phase", obj: `{"status":{"phase":"x"}}`, done: true},
		{success: "!status.phase", obj: `{"status":{"phase":"x"}}`},
		{success: "status.phase == Succeeded, status.ok == true", obj: `{"status":{"phase":"Succeeded","ok":false}}`},
		{success: "status.phase == Succeeded, status.ok == true", obj: `{"status":{"phase":"Succeeded","ok":true}}`, done: true},
		{success: "status.phase notin (Running, Pending)", obj: `{"status":{"phase":"Done"}}`, done: true},
		{failure: "status.phase in (Failed, Error)", obj: `{"status":{"phase":"Error"}}`, failed: "status.phase in (Error,Failed)"},
		{failure: "status.phase in (Failed, Error)", obj: `{"status":{"phase":"Running"}}`, done: true}, // Argo: no success condition means done
		{success: "status.phase == Succeeded", failure: "status.phase in (Failed, Error)", obj: `{"status":{"phase":"Running"}}`},
		{success: "status.phase == Succeeded", failure: "status.failed > 3, status.phase == Lost", obj: `{"status":{"phase":"Lost"}}`, failed: "status.phase==Lost"}, // any failure requirement fails
	} {
		t.Run(tc.success+"|"+tc.failure+"|"+tc.obj, func(t *testing.T) {
			c, err := parseConditions(tc.success, tc.failure)
			if err != nil {
				t.Fatal(err)
			}
			done, _, err := c.evaluate([]byte(tc.obj))
			var failed *FailedError
			switch {
			case tc.failed != "":
				if !errors.As(err, &failed) || failed.Requirement != tc.failed {
					t.Fatalf("evaluate = %v, want failure %q", err, tc.failed)
				}
			case err != nil:
				t.Fatalf("evaluate: %v", err)
			case done != tc.done:
				t.Fatalf("done = %v, want %v", done, tc.done)
			}
		})
	}
	if _, err := parseConditions("status.succeeded > x", ""); err == nil || !strings.Contains(err.Error(), "success condition 'status.succeeded > x' failed to parse") {
		t.Errorf("parse error = %v", err)
	}
}

func wfObject(phase string) *unstructured.Unstructured {
	return obj("argoproj.io/v1alpha1", "Workflow", "argo", "sleep-1", map[string]any{"status": map[string]any{"phase": phase}})
}

// k8sWaitWf is Argo's examples/k8s-wait-wf.yaml wait-wf template.
func k8sWaitWf() *wf.Template {
	return &wf.Template{Resource: &wf.ResourceTemplate{Action: "get", SuccessCondition: "status.phase == Succeeded", FailureCondition: "status.phase in (Failed, Error)",
		Manifest: "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: sleep-1\n"}}
}

func TestGetWaitsOnExistingObject(t *testing.T) {
	for _, tc := range []struct {
		phase   string
		wantErr string
	}{
		{phase: "Succeeded"},
		{phase: "Error", wantErr: "workflow.argoproj.io/sleep-1 in namespace argo: failure condition 'status.phase in (Error,Failed)' evaluated true"},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			f := newFixture(t, wfObject(tc.phase))
			err := f.executor("get", k8sWaitWf()).Run(context.Background())
			if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Fatalf("Run = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestGetMissingFails(t *testing.T) {
	f := newFixture(t)
	err := f.executor("get", k8sWaitWf()).Run(context.Background())
	if err == nil || !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "get workflow.argoproj.io/sleep-1 in namespace argo: not found") {
		t.Fatalf("Run = %v, want not found naming the workflow", err)
	}
}

func TestDeletedWhileWaiting(t *testing.T) {
	f := newFixture(t, wfObject("Running"))
	wait := f.run(context.Background(), f.executor("get", k8sWaitWf()))
	f.awaitWatch(wfGVR)
	if err := f.client.Resource(wfGVR).Namespace("argo").Delete(context.Background(), "sleep-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var deleted *DeletedError
	if err := wait(); !errors.As(err, &deleted) {
		t.Fatalf("Run = %v, want DeletedError", err)
	}
}

func TestWatchRefusedPolls(t *testing.T) {
	f := newFixture(t, wfObject("Running"))
	forbidden := func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("no list"))
	}
	f.client.PrependReactor("list", "workflows", forbidden)
	e := f.executor("get", k8sWaitWf())
	wait := f.run(context.Background(), e)
	// Polling: the ticker is the only waiter once the informer gave up.
	for !f.clock.HasWaiters() {
		goruntime.Gosched() // lets the goroutine under test reach its ticker; time is the fake clock's
	}
	f.clock.Step(DefaultPollInterval)
	f.setStatus(wfGVR, "argo", "sleep-1", map[string]any{"phase": "Succeeded"})
	f.clock.Step(DefaultPollInterval)
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestDeadlineAndCancel(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		f := newFixture(t, wfObject("Running"))
		e := f.executor("get", k8sWaitWf())
		e.Deadline = f.clock.Now().Add(time.Minute)
		wait := f.run(context.Background(), e)
		f.awaitWatch(wfGVR)
		f.clock.Step(2 * time.Minute)
		err := wait()
		if err == nil || !strings.Contains(err.Error(), "deadline (2026-01-02T03:05:05Z, ARGO_DEADLINE) passed") || errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want the deadline named", err)
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		f := newFixture(t, wfObject("Running"))
		ctx, cancel := context.WithCancel(context.Background())
		wait := f.run(ctx, f.executor("get", k8sWaitWf()))
		f.awaitWatch(wfGVR)
		cancel()
		if err := wait(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	})
}

func TestApply(t *testing.T) {
	f := newFixture(t)
	// The fake's tracker applies to existing objects only; the API server creates.
	f.client.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchActionImpl)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		if err := f.client.Tracker().Create(cmGVR, o, p.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, o, nil
	})
	tmpl := &wf.Template{Resource: &wf.ResourceTemplate{Action: "apply", Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: other\ndata:\n  k: v\n"}}
	if err := f.executor("apply", tmpl).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	cm, err := f.client.Resource(cmGVR).Namespace("other").Get(context.Background(), "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("applied object: %v", err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "k"); v != "v" {
		t.Errorf("data.k = %q", v)
	}
	for _, a := range f.client.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok {
			if p.GetPatchType() != types.ApplyPatchType || p.PatchOptions.FieldManager != "argoexec" || p.PatchOptions.Force == nil || !*p.PatchOptions.Force {
				t.Errorf("apply = %s %+v, want server-side apply, manager argoexec, force", p.GetPatchType(), p.PatchOptions)
			}
		}
	}
	tmpl.Resource.Manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: cfg-\n"
	if err := f.executor("apply", tmpl).Run(context.Background()); err == nil || !strings.Contains(err.Error(), "has no metadata.name, which action apply needs") {
		t.Errorf("apply with generateName = %v", err)
	}
}

func TestPatch(t *testing.T) {
	pod := obj("v1", "Pod", "argo", "wf-1-pod", map[string]any{"metadata": map[string]any{"name": "wf-1-pod", "namespace": "argo", "annotations": map[string]any{"a": "1"}}})
	for _, tc := range []struct {
		name     string
		res      wf.ResourceTemplate
		wantType types.PatchType
	}{
		{name: "merge", res: wf.ResourceTemplate{Action: "patch", MergeStrategy: "merge", Manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: wf-1-pod\n  annotations:\n    foo: bar\n"}, wantType: types.MergePatchType},
		{name: "json, target from flags", res: wf.ResourceTemplate{Action: "patch", MergeStrategy: "json", Flags: []string{"pod", "wf-1-pod"}, Manifest: "- op: add\n  path: /metadata/annotations/foo\n  value: bar\n"}, wantType: types.JSONPatchType},
		{name: "json, TYPE/NAME and -n", res: wf.ResourceTemplate{Action: "patch", MergeStrategy: "json", Flags: []string{"po/wf-1-pod", "-n", "argo"}, Manifest: `[{"op":"add","path":"/metadata/annotations/foo","value":"bar"}]`}, wantType: types.JSONPatchType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, pod.DeepCopy())
			res := tc.res
			if err := f.executor("patch", &wf.Template{Resource: &res}).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			got, err := f.client.Resource(podsGVR).Namespace("argo").Get(context.Background(), "wf-1-pod", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if a := got.GetAnnotations(); a["foo"] != "bar" || a["a"] != "1" {
				t.Errorf("annotations = %v, want foo=bar added to a=1", a)
			}
			for _, a := range f.client.Actions() {
				if p, ok := a.(clienttesting.PatchActionImpl); ok && p.GetPatchType() != tc.wantType {
					t.Errorf("patch type = %s, want %s", p.GetPatchType(), tc.wantType)
				}
			}
		})
	}
	t.Run("strategic is the default", func(t *testing.T) {
		f := newFixture(t, pod.DeepCopy())
		var gotType types.PatchType
		f.client.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
			gotType = a.(clienttesting.PatchAction).GetPatchType()
			return true, pod.DeepCopy(), nil
		})
		res := wf.ResourceTemplate{Action: "patch", Manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: wf-1-pod\n  annotations:\n    foo: bar\n"}
		if err := f.executor("patch", &wf.Template{Resource: &res}).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if gotType != types.StrategicMergePatchType {
			t.Errorf("patch type = %s, want strategic", gotType)
		}
	})
}

func TestDelete(t *testing.T) {
	cm := func(name string, labels map[string]any) *unstructured.Unstructured {
		return obj("v1", "ConfigMap", "argo", name, map[string]any{"metadata": map[string]any{"name": name, "namespace": "argo", "labels": labels}})
	}
	for _, tc := range []struct {
		name    string
		res     wf.ResourceTemplate
		left    []string
		wantErr string
	}{
		{name: "manifest", res: wf.ResourceTemplate{Action: "delete", Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"}, left: []string{"b", "c"}},
		{name: "missing is no error", res: wf.ResourceTemplate{Action: "delete", Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nope\n"}, left: []string{"a", "b", "c"}},
		{name: "selector", res: wf.ResourceTemplate{Action: "delete", Flags: []string{"configmap", "--selector", "cleanup=true"}}, left: []string{"c"}},
		{name: "names", res: wf.ResourceTemplate{Action: "delete", Flags: []string{"cm", "a", "c", "--wait=false"}}, left: []string{"b"}},
		{name: "conditions refused", res: wf.ResourceTemplate{Action: "delete", SuccessCondition: "a", Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"},
			left: []string{"a", "b", "c"}, wantErr: "successCondition, failureCondition and outputs are not supported for delete action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, cm("a", map[string]any{"cleanup": "true"}), cm("b", map[string]any{"cleanup": "true"}), cm("c", nil))
			res := tc.res
			err := f.executor("delete", &wf.Template{Resource: &res}).Run(context.Background())
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Run = %v, want %q", err, tc.wantErr)
			}
			list, err := f.client.Resource(cmGVR).Namespace("argo").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, it := range list.Items {
				left = append(left, it.GetName())
			}
			if strings.Join(left, ",") != strings.Join(tc.left, ",") {
				t.Errorf("left = %v, want %v", left, tc.left)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		action  string
		flags   []string
		wantErr string
		check   func(*flags) bool
	}{
		{action: "create", flags: []string{"--validate=false"}, check: func(f *flags) bool { return f.validation == metav1.FieldValidationIgnore }},
		{action: "create", flags: []string{"--validate"}, check: func(f *flags) bool { return f.validation == metav1.FieldValidationStrict }},
		{action: "get", flags: []string{"-n", "x"}, check: func(f *flags) bool { return f.namespace == "x" }},
		{action: "get", flags: []string{"-nx"}, check: func(f *flags) bool { return f.namespace == "x" }},
		{action: "get", flags: []string{"--namespace=x"}, check: func(f *flags) bool { return f.namespace == "x" }},
		{action: "delete", flags: []string{"configmap", "-l", "a=b", "--cascade=foreground", "--grace-period", "0"}, check: func(f *flags) bool {
			return f.selector == "a=b" && *f.propagation == metav1.DeletePropagationForeground && *f.gracePeriod == 0 && f.args[0] == "configmap"
		}},
		{action: "apply", flags: []string{"--force-conflicts=false", "--server-side"}, check: func(f *flags) bool { return !*f.forceConflicts }},
		{action: "create", flags: []string{"--kubeconfig=/x"}, wantErr: `resource template flag "--kubeconfig=/x" is not supported: argoexec acts through the Kubernetes API, not kubectl, and supports -n/--namespace;`},
		{action: "create", flags: []string{"-o", "yaml"}, wantErr: `resource template flag "-o" is not supported`},
		{action: "create", flags: []string{"--selector", "a=b"}, wantErr: `resource template flag "--selector" does not apply to action create (it applies to delete); remove it`},
		{action: "create", flags: []string{"-n"}, wantErr: `resource template flag "-n" needs a value`},
		{action: "apply", flags: []string{"--server-side=false"}, wantErr: "argoexec always applies server-side"},
	} {
		t.Run(tc.action+" "+strings.Join(tc.flags, " "), func(t *testing.T) {
			f, err := parseFlags(tc.action, tc.flags)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFlags = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(f) {
				t.Fatalf("parseFlags = %+v, %v", f, err)
			}
		})
	}
}

func TestCreateValidateFlagAndRefusals(t *testing.T) {
	f := newFixture(t)
	var opts metav1.CreateOptions
	f.client.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		opts = a.(clienttesting.CreateActionImpl).CreateOptions
		return false, nil, nil
	})
	tmpl := &wf.Template{Resource: &wf.ResourceTemplate{Action: "create", Flags: []string{"--validate=false"}, Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"}}
	if err := f.executor("create", tmpl).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if opts.FieldValidation != metav1.FieldValidationIgnore {
		t.Errorf("fieldValidation = %q, want Ignore for --validate=false", opts.FieldValidation)
	}

	f = newFixture(t)
	f.client.PrependReactor("create", "jobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "", errors.New(`User "system:serviceaccount:argo:default" cannot create resource "jobs"`))
	})
	err := f.executor("create", k8sJobs()).Run(context.Background())
	if want := `create job.batch/pi-job-* in namespace argo: forbidden: grant the workflow's service account the verb "create" on resource "jobs" in API group "batch" in namespace argo (a Role there)`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Run = %v, want prefix %q", err, want)
	}

	for _, tc := range []struct {
		tmpl    *wf.Template
		action  string
		wantErr string
	}{
		{action: "label", tmpl: k8sJobs(), wantErr: `resource template action "label" is not supported: want one of get, create, apply, delete, replace, patch`},
		{action: "create", tmpl: &wf.Template{Resource: &wf.ResourceTemplate{Action: "create", Manifest: "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r\n"}},
			wantErr: "the cluster serves no kind Route (apiVersion route.openshift.io/v1) (is its CustomResourceDefinition installed, and the apiVersion right?)"},
		{action: "create", tmpl: &wf.Template{Resource: &wf.ResourceTemplate{Action: "create", Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"}},
			wantErr: "the resource template's manifest holds 2 objects"},
		{action: "create", tmpl: &wf.Template{Resource: &wf.ResourceTemplate{Action: "create", Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"},
			Outputs: wf.Outputs{Parameters: []wf.Parameter{{Name: "p", ValueFrom: &wf.ValueFrom{Path: "/tmp/x"}}}}},
			wantErr: `output parameter "p": valueFrom.path has no meaning in a resource template`},
		{action: "create", tmpl: &wf.Template{Resource: &wf.ResourceTemplate{Action: "create", Flags: []string{"cm", "x"}}},
			wantErr: `resource template flags ["cm" "x"] name objects, which action create does not take`},
		{action: "patch", tmpl: &wf.Template{Resource: &wf.ResourceTemplate{Action: "patch", MergeStrategy: "json", Manifest: "- op: add\n"}},
			wantErr: "no object named: give flags [TYPE, NAME] or [TYPE/NAME]"},
	} {
		t.Run(tc.wantErr, func(t *testing.T) {
			err := newFixture(t).executor(tc.action, tc.tmpl).Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Run = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestSetOwnerReference(t *testing.T) {
	pod := obj("v1", "Pod", "argo", "wf-1-pod", nil)
	pod.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow", Name: "wf-1", UID: "uid-1"}})
	f := newFixture(t, pod)
	tmpl := &wf.Template{Resource: &wf.ResourceTemplate{Action: "create", SetOwnerReference: true, Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: owned-eg-\ndata:\n  some: value\n"}}
	if err := f.executor("create", tmpl).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	cm, err := f.client.Resource(cmGVR).Namespace("argo").Get(context.Background(), "owned-eg-x1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := cm.GetOwnerReferences()
	if len(refs) != 1 || refs[0].Name != "wf-1" || refs[0].UID != "uid-1" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("ownerReferences = %+v, want the pod's Workflow as controller", refs)
	}

	// Argo's controller already put the reference in the manifest: the pod is not read.
	f = newFixture(t)
	tmpl.Resource.Manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pre\n  ownerReferences:\n  - apiVersion: argoproj.io/v1alpha1\n    kind: Workflow\n    name: wf-2\n    uid: uid-2\n    controller: true\n"
	if err := f.executor("create", tmpl).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.client.Actions() {
		if a.GetResource() == podsGVR {
			t.Errorf("read the pod although the manifest has its owner: %v", a)
		}
	}
}

func TestClusterScopedAndReplace(t *testing.T) {
	f := newFixture(t, obj("v1", "ConfigMap", "argo", "r", map[string]any{"data": map[string]any{"k": "old"}}))
	tmpl := &wf.Template{Resource: &wf.ResourceTemplate{Action: "create", Manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n"},
		Outputs: wf.Outputs{Parameters: []wf.Parameter{{Name: "ns", ValueFrom: &wf.ValueFrom{JSONPath: "{.metadata.name}"}}}}}
	if err := f.executor("create", tmpl).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Resource(nsGVR).Get(context.Background(), "team-a", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace not created cluster-wide: %v", err)
	}
	tmpl = &wf.Template{Resource: &wf.ResourceTemplate{Action: "replace", Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n  k: new\n"}}
	if err := f.executor("replace", tmpl).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	cm, _ := f.client.Resource(cmGVR).Namespace("argo").Get(context.Background(), "r", metav1.GetOptions{})
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "k"); v != "new" {
		t.Errorf("replaced data.k = %q", v)
	}
}
