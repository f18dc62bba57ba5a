package argo_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/argoexec/argoexec/executor/protocol/argo"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

type recordingReporter struct{ got *wf.NodeOutputs }

func (r *recordingReporter) Report(_ context.Context, o *wf.NodeOutputs) error { r.got = o; return nil }

func TestTaskResultReporter(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowtaskresults"}
	result := "hello"
	outputs := &wf.NodeOutputs{
		Parameters: []wf.Parameter{{Name: "p", Value: wf.AnyStringPtr("42")}},
		Result:     &result,
		ExitCode:   new(int), // never reported: the controller reads main's status
	}
	existing := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskResult",
		"metadata": map[string]any{"name": "wf-1-123", "namespace": "ns"},
		"progress": "1/2",
	}}
	tests := []struct {
		name         string
		outputs      *wf.NodeOutputs
		objects      []runtime.Object
		failCreate   error // returned by every create
		wantErr      string
		wantFallback bool
		wantActions  []string
		wantMessage  string // in the task result's message
	}{
		{name: "created with labels and owner", outputs: outputs, wantActions: []string{"create"}},
		{name: "merge-patched when it exists (progress kept)", outputs: outputs, objects: []runtime.Object{existing}, wantActions: []string{"create", "patch"}},
		{name: "forbidden falls back to the pod annotation", outputs: outputs, wantFallback: true,
			failCreate: apierrors.NewForbidden(gvr.GroupResource(), "wf-1-123", nil), wantActions: []string{"create"}},
		{name: "CRD missing is an error that says so", outputs: outputs,
			failCreate: apierrors.NewNotFound(gvr.GroupResource(), ""), wantErr: "the WorkflowTaskResult CRD is not installed", wantActions: []string{"create"}},
		{name: "a busy server is retried, then the error names the attempts", outputs: outputs,
			failCreate: apierrors.NewServiceUnavailable("busy"), wantErr: "(attempt 5)", wantActions: []string{"create", "create", "create", "create", "create"}},
		{name: "nothing to report writes nothing", outputs: &wf.NodeOutputs{ExitCode: new(int)}},
		// Argo's Outputs has no field for replaced bytes: the message says it.
		{name: "replaced bytes are said in the message", outputs: &wf.NodeOutputs{Result: &result,
			Parameters: outputs.Parameters, ResultReplaced: &wf.ResultReplacement{Bytes: 2, FirstOffset: 7}},
			wantActions: []string{"create"}, wantMessage: "2 bytes that are not UTF-8 (the first at byte offset 7 of main's output)"},
		{name: "replaced bytes are said in the message of a patch too", outputs: &wf.NodeOutputs{Result: &result,
			Parameters: outputs.Parameters, ResultReplaced: &wf.ResultReplacement{Bytes: 1, FirstOffset: 0}},
			objects: []runtime.Object{existing}, wantActions: []string{"create", "patch"}, wantMessage: "1 bytes that are not UTF-8"},
		{name: "a result that may be incomplete is said in the message", outputs: &wf.NodeOutputs{Result: &result,
			Parameters: outputs.Parameters, ResultIncomplete: "the runtime was down"},
			wantActions: []string{"create"}, wantMessage: "the result may be incomplete: the runtime was down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{gvr: "WorkflowTaskResultList"}, tt.objects...)
			if tt.failCreate != nil {
				client.PrependReactor("create", "workflowtaskresults", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.failCreate
				})
			}
			fallback := &recordingReporter{}
			clk := clocktesting.NewFakeClock(metav1.Now().Time)
			r := &argo.TaskResultReporter{Client: client, Namespace: "ns", NodeID: "wf-1-123", WorkflowName: "wf-1",
				InstanceID: "i1", PodName: "wf-1-123", PodUID: "uid-1", Fallback: fallback, Clock: clk}
			done := make(chan error, 1)
			go func() { done <- r.Report(context.Background(), tt.outputs) }()
			var err error
			for waiting := true; waiting; {
				select {
				case err = <-done:
					waiting = false
				default:
					if clk.HasWaiters() {
						clk.Step(clk.Since(metav1.Now().Time) + 60e9)
					}
				}
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Report: %v, want error containing %q", err, tt.wantErr)
			}
			var verbs []string
			for _, a := range client.Actions() {
				verbs = append(verbs, a.GetVerb())
			}
			if strings.Join(verbs, ",") != strings.Join(tt.wantActions, ",") {
				t.Errorf("actions = %v, want %v", verbs, tt.wantActions)
			}
			if (fallback.got != nil) != tt.wantFallback {
				t.Errorf("fallback used = %v, want %v", fallback.got != nil, tt.wantFallback)
			}
			if tt.failCreate != nil || len(tt.wantActions) == 0 {
				return
			}
			got, err := client.Resource(gvr).Namespace("ns").Get(context.Background(), "wf-1-123", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v, _, _ := unstructured.NestedString(got.Object, "outputs", "result"); v != "hello" {
				t.Errorf("outputs.result = %q", v)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "outputs", "exitCode"); found {
				t.Errorf("outputs.exitCode reported; the controller reads it from main's status")
			}
			if m, _, _ := unstructured.NestedString(got.Object, "message"); !strings.Contains(m, tt.wantMessage) || tt.wantMessage == "" && m != "" {
				t.Errorf("message = %q, want it to say %q", m, tt.wantMessage)
			}
			params, _, _ := unstructured.NestedSlice(got.Object, "outputs", "parameters")
			if len(params) != 1 || params[0].(map[string]any)["value"] != "42" {
				t.Errorf("outputs.parameters = %v", params)
			}
			if len(tt.objects) > 0 {
				if p, _, _ := unstructured.NestedString(got.Object, "progress"); p != "1/2" {
					t.Errorf("patch lost progress: %q", p)
				}
				return
			}
			if l := got.GetLabels(); l[wf.LabelWorkflow] != "wf-1" || l[wf.LabelControllerInstanceID] != "i1" {
				t.Errorf("labels = %v", l)
			}
			if o := got.GetOwnerReferences(); len(o) != 1 || o[0].Kind != "pods" || o[0].Name != "wf-1-123" || string(o[0].UID) != "uid-1" {
				t.Errorf("ownerReferences = %v", o)
			}
		})
	}
}

// TestTaskResultBudget: a task result has no annotation budget, so Argo's
// 256 KiB result goes whole; beside parameters that leave it less than
// TaskResultOutputsBudget it is cut to its tail, saying so; parameters over
// the budget on their own are an error naming the biggest. On 403 the
// fallback gets the outputs as collected (and fits them to its own budget).
func TestTaskResultBudget(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowtaskresults"}
	result := strings.Repeat("x", wf.MaxFileBytes-2) + "42"
	tests := []struct {
		name       string
		params     int // bytes of parameters
		forbidden  bool
		wantKept   int // bytes of the result in the task result; -1: not written
		wantErr    string
		wantIntact bool // the fallback got the whole result
	}{
		{name: "Argo's 256 KiB result fits whole", params: 1, wantKept: len(result)},
		{name: "cut to what the parameters leave", params: argo.TaskResultOutputsBudget - 100*1024, wantKept: -2},
		{name: "parameters over the budget alone", params: argo.TaskResultOutputsBudget + 1, wantKept: -1, wantErr: "the biggest is output parameter p"},
		{name: "forbidden: the fallback gets it as collected", params: argo.TaskResultOutputsBudget - 100*1024, forbidden: true, wantKept: -1, wantIntact: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{gvr: "WorkflowTaskResultList"})
			if tt.forbidden {
				client.PrependReactor("create", "workflowtaskresults", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(gvr.GroupResource(), "wf-1-123", nil)
				})
			}
			fallback := &recordingReporter{}
			r := &argo.TaskResultReporter{Client: client, Namespace: "ns", NodeID: "wf-1-123", WorkflowName: "wf-1", PodName: "p", PodUID: "u", Fallback: fallback}
			res := result
			out := &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "p", Value: wf.AnyStringPtr(strings.Repeat("p", tt.params))}}, Result: &res, ResultIsLog: true}
			err := r.Report(context.Background(), out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "WorkflowTaskResult's") {
					t.Fatalf("Report = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Report: %v", err)
			}
			if tt.wantIntact && (fallback.got == nil || *fallback.got.Result != result || fallback.got.ResultTruncated) {
				t.Errorf("the fallback did not get the result as collected")
			}
			if *out.Result != result {
				t.Errorf("Report changed the caller's outputs")
			}
			if tt.wantKept == -1 {
				return
			}
			got, err := client.Resource(gvr).Namespace("ns").Get(context.Background(), "wf-1-123", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			v, _, _ := unstructured.NestedString(got.Object, "outputs", "result")
			b, _ := json.Marshal(got.Object["outputs"])
			switch {
			case !strings.HasSuffix(result, v) || !strings.HasSuffix(v, "42"):
				t.Errorf("the task result's result is not the tail of main's output")
			case tt.wantKept >= 0 && len(v) != tt.wantKept:
				t.Errorf("result keeps %d bytes, want %d", len(v), tt.wantKept)
			case tt.wantKept == -2 && (len(v) == len(result) || len(b) > argo.TaskResultOutputsBudget || len(b) < argo.TaskResultOutputsBudget-64):
				t.Errorf("result keeps %d of %d bytes; outputs are %d bytes: want a cut to fill the %d-byte budget", len(v), len(result), len(b), argo.TaskResultOutputsBudget)
			}
		})
	}
}
