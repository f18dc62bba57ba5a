package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// taskSet is a WorkflowTaskSet named wf in argo with the tasks given (node
// ID to template JSON) and labels.
func taskSet(t *testing.T, tasks map[string]string, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{}
	for id, js := range tasks {
		var v any
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Fatal(err)
		}
		spec[id] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskSet",
		"metadata": map[string]any{"name": "wf", "namespace": "argo"},
		"spec":     map[string]any{"tasks": spec},
	}}
	u.SetLabels(labels)
	return u
}

// fakeAPI is the fake dynamic client with the patches of the taskset's
// status it received, and a signal once a watch has started.
type fakeAPI struct {
	client   *dynamicfake.FakeDynamicClient
	mu       sync.Mutex
	patches  []string
	patched  chan struct{} // one value per status patch
	watching chan struct{} // closed at the first watch
}

func newFakeAPI(t *testing.T, objs ...runtime.Object) *fakeAPI {
	t.Helper()
	f := &fakeAPI{
		client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{TaskSetResource(): "WorkflowTaskSetList"}, objs...),
		patched:  make(chan struct{}, 100),
		watching: make(chan struct{}),
	}
	var once sync.Once
	f.client.PrependWatchReactor("workflowtasksets", func(k8stesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(f.watching) })
		return false, nil, nil
	})
	f.client.PrependReactor("patch", "workflowtasksets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		p := action.(k8stesting.PatchAction)
		if p.GetSubresource() != "status" || p.GetPatchType() != types.MergePatchType {
			t.Errorf("patch of subresource %q type %s, want a merge patch of status", p.GetSubresource(), p.GetPatchType())
		}
		f.mu.Lock()
		f.patches = append(f.patches, string(p.GetPatch()))
		f.mu.Unlock()
		f.patched <- struct{}{}
		return false, nil, nil
	})
	return f
}

// runAgent starts an agent over api and returns what Run returned, once it has.
func runAgent(ctx context.Context, api *fakeAPI, a *Agent) <-chan error {
	a.Client = api.client
	if a.PatchRate == 0 {
		a.PatchRate = 5 * time.Millisecond
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return done
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func waitRun(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

// TestAgentRunsEachTaskOnceAndPatchesArgosShape: every task of the
// taskset runs once, however often the taskset changes; the results reach
// the status as Argo's agent patches them; deleting the taskset ends Run.
func TestAgentRunsEachTaskOnceAndPatchesArgosShape(t *testing.T) {
	srv, s := target(t, 200, "hello")
	missing, _ := target(t, 404, "nope")
	api := newFakeAPI(t, taskSet(t, map[string]string{
		"wf-1": `{"name":"http","http":{"url":"` + srv.URL + `"}}`,
		"wf-2": `{"name":"http","http":{"url":"` + missing.URL + `"}}`,
		"wf-3": `{"name":"c","container":{"image":"busybox"}}`,
	}, nil))
	ctx := context.Background()
	done := runAgent(ctx, api, newTestAgent(clock.RealClock{}))
	waitFor(t, api.watching, "the watch")
	waitFor(t, api.patched, "the first patch")
	for {
		api.mu.Lock()
		js := strings.Join(api.patches, "\n")
		api.mu.Unlock()
		if strings.Contains(js, `"wf-1"`) && strings.Contains(js, `"wf-2"`) && strings.Contains(js, `"wf-3"`) {
			break
		}
		waitFor(t, api.patched, "the other results")
	}
	// The same tasks again, and a new one: only the new one runs.
	ri := api.client.Resource(TaskSetResource()).Namespace("argo")
	ts := taskSet(t, map[string]string{
		"wf-1": `{"name":"http","http":{"url":"` + srv.URL + `"}}`,
		"wf-4": `{"name":"http","http":{"url":"` + srv.URL + `/four"}}`,
	}, nil)
	if _, err := ri.Update(ctx, ts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		api.mu.Lock()
		js := strings.Join(api.patches, "\n")
		api.mu.Unlock()
		if strings.Contains(js, `"wf-4"`) {
			break
		}
		waitFor(t, api.patched, "wf-4's result")
	}
	if err := ri.Delete(ctx, "wf", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitRun(t, done); err != nil {
		t.Fatalf("Run = %v, want nil once the taskset is deleted", err)
	}
	s.mu.Lock()
	calls := s.calls
	s.mu.Unlock()
	if calls != 2 {
		t.Errorf("the target got %d requests, want 2 (wf-1 once, wf-4 once)", calls)
	}

	// Argo's shape: {"status":{"nodes":{ID: {phase, message, outputs.result}}}}.
	got := map[string]wf.NodeResult{}
	api.mu.Lock()
	for _, p := range api.patches {
		var body struct {
			Status struct {
				Nodes map[string]json.RawMessage `json:"nodes"`
			} `json:"status"`
		}
		dec := json.NewDecoder(strings.NewReader(p))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil || len(body.Status.Nodes) == 0 {
			t.Errorf("patch %s: not {status:{nodes:{...}}}: %v", p, err)
		}
		for id, raw := range body.Status.Nodes {
			var n wf.NodeResult
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatal(err)
			}
			got[id] = n
		}
	}
	api.mu.Unlock()
	want := map[string]string{
		"wf-1": `{"phase":"Succeeded","outputs":{"result":"hello"}}`,
		"wf-2": `{"phase":"Failed","message":"received non-2xx response code: 404","outputs":{"result":"nope"}}`,
		"wf-4": `{"phase":"Succeeded","outputs":{"result":"hello"}}`,
	}
	for id, w := range want {
		js, _ := json.Marshal(got[id])
		if string(js) != w {
			t.Errorf("node %s = %s, want %s", id, js, w)
		}
	}
	if n := got["wf-3"]; n.Phase != wf.NodeError || !strings.Contains(n.Message, "neither an http nor a plugin template") {
		t.Errorf("node wf-3 = %+v, want an error naming what the agent runs", n)
	}
}

// TestAgentStops: Run ends, without running anything, when the taskset
// says the workflow is completed or is not there at all.
func TestAgentStops(t *testing.T) {
	srv, s := target(t, 200, "hello")
	tests := []struct {
		name string
		objs []runtime.Object
	}{
		{"completed", []runtime.Object{taskSet(t, map[string]string{"wf-1": `{"http":{"url":"` + srv.URL + `"}}`}, map[string]string{wf.LabelCompleted: "true"})}},
		{"no taskset", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.objs...)
			if err := waitRun(t, runAgent(context.Background(), api, newTestAgent(clock.RealClock{}))); err != nil {
				t.Fatalf("Run = %v", err)
			}
			if s.calls != 0 {
				t.Errorf("the target got %d requests", s.calls)
			}
		})
	}
}

// TestAgentStopsWhenCompletedLater: the controller's completion label,
// patched while Run watches, ends it.
func TestAgentStopsWhenCompletedLater(t *testing.T) {
	api := newFakeAPI(t, taskSet(t, nil, nil))
	done := runAgent(context.Background(), api, newTestAgent(clock.RealClock{}))
	waitFor(t, api.watching, "the watch")
	ri := api.client.Resource(TaskSetResource()).Namespace("argo")
	if _, err := ri.Update(context.Background(), taskSet(t, nil, map[string]string{wf.LabelCompleted: "true"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitRun(t, done); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestAgentPatchForbidden: a status patch the service account may not
// make ends Run with what to grant, instead of retrying forever.
func TestAgentPatchForbidden(t *testing.T) {
	srv, _ := target(t, 200, "hello")
	api := newFakeAPI(t, taskSet(t, map[string]string{"wf-1": `{"http":{"url":"` + srv.URL + `"}}`}, nil))
	api.client.PrependReactor("patch", "workflowtasksets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(TaskSetResource().GroupResource(), "wf", errors.New("no"))
	})
	err := waitRun(t, runAgent(context.Background(), api, newTestAgent(clock.RealClock{})))
	if err == nil || !strings.Contains(err.Error(), `needs RBAC verb "patch" on resource "workflowtasksets/status" in namespace argo`) {
		t.Fatalf("Run = %v", err)
	}
}

// TestAgentRefusedResultsBecomeErrors: results the API server refuses
// (too big, say) are replaced by an error on each node, as Argo's agent does.
func TestAgentRefusedResultsBecomeErrors(t *testing.T) {
	srv, _ := target(t, 200, "hello")
	api := newFakeAPI(t, taskSet(t, map[string]string{"wf-1": `{"http":{"url":"` + srv.URL + `"}}`}, nil))
	var mu sync.Mutex
	refused := 0
	api.client.PrependReactor("patch", "workflowtasksets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(string(action.(k8stesting.PatchAction).GetPatch()), `"hello"`) {
			refused++
			return true, nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := runAgent(ctx, api, newTestAgent(clock.RealClock{}))
	waitFor(t, api.patched, "a patch")
	for {
		api.mu.Lock()
		js := strings.Join(api.patches, "\n")
		api.mu.Unlock()
		if strings.Contains(js, `"Error"`) {
			if !strings.Contains(js, "HTTP request completed successfully but an error occurred when patching its result") {
				t.Errorf("patches = %s", js)
			}
			break
		}
		waitFor(t, api.patched, "the error result")
	}
	cancel()
	if err := waitRun(t, done); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if refused != 1 {
		t.Errorf("the result was refused %d times, want 1", refused)
	}
}

// TestAgentRequeuesPlugins: a plugin that answers Running with a requeue
// is called again after that long, and its final result is reported.
func TestAgentRequeuesPlugins(t *testing.T) {
	p := newPluginServer(t, reply{200, `{"node":{"phase":"Running","progress":"0/1"},"requeue":"10ms"}`}, reply{200, `{"node":{"phase":"Succeeded","progress":"1/1"}}`})
	api := newFakeAPI(t, taskSet(t, map[string]string{"wf-1": pluginTemplate}, nil))
	a := newTestAgent(clock.RealClock{})
	a.Plugins = []*Plugin{{Name: "hello", Address: p.URL, Token: "t"}}
	ctx, cancel := context.WithCancel(context.Background())
	done := runAgent(ctx, api, a)
	for {
		waitFor(t, api.patched, "the plugin's final result")
		api.mu.Lock()
		js := strings.Join(api.patches, "\n")
		api.mu.Unlock()
		if strings.Contains(js, `{"wf-1":{"phase":"Succeeded","progress":"1/1"}}`) {
			break
		}
	}
	cancel()
	if err := waitRun(t, done); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
	if p.count() != 2 {
		t.Errorf("the plugin was called %d times, want 2", p.count())
	}
}

// TestAgentPatchNotFound: a taskset deleted before its results are
// patched drops them (the workflow is gone) instead of failing Run.
func TestAgentPatchNotFound(t *testing.T) {
	srv, _ := target(t, 200, "hello")
	api := newFakeAPI(t, taskSet(t, map[string]string{"wf-1": `{"http":{"url":"` + srv.URL + `"}}`}, nil))
	refused := make(chan struct{}, 100)
	api.client.PrependReactor("patch", "workflowtasksets", func(k8stesting.Action) (bool, runtime.Object, error) {
		refused <- struct{}{}
		return true, nil, apierrors.NewNotFound(TaskSetResource().GroupResource(), "wf")
	})
	a := newTestAgent(clock.RealClock{})
	a.TaskWorkers = 1
	done := runAgent(context.Background(), api, a)
	waitFor(t, api.watching, "the watch")
	waitFor(t, refused, "a patch")
	// More ticks pass with nothing pending: Run is still watching.
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before the taskset was deleted", err)
	default:
	}
	if err := api.client.Resource(TaskSetResource()).Namespace("argo").Delete(context.Background(), "wf", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitRun(t, done); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}
