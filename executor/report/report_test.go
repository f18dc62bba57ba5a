package report

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestPodReporterFitsTheResult: a result as long as MaxResultBytes (what
// collectResult keeps of a 10 MiB output) is cut to what the annotation
// budget leaves after the template and the parameters, keeping its tail,
// and the report says how much was dropped in all; parameters over the
// budget on their own are still the clear error.
func TestPodReporterFitsTheResult(t *testing.T) {
	const templateBytes = 10 * 1024
	tail := "the answer is 42"
	tests := []struct {
		name        string
		param       string
		result      string
		dropped     int64 // already dropped when collected
		document    bool  // the result is a document (a data template's), not a log
		wantErr     string
		wantCut     bool
		wantDropped func(kept int) int64
	}{
		{name: "a small result is whole", param: "p", result: "hello", wantDropped: func(int) int64 { return 0 }},
		{name: "a 256 KiB tail is cut to the budget left, the tail kept", param: "p", result: strings.Repeat("x", wf.MaxFileBytes-len(tail)) + tail,
			dropped: 10<<20 - wf.MaxFileBytes, wantCut: true,
			wantDropped: func(kept int) int64 { return 10<<20 - int64(kept) }},
		{name: "characters JSON escapes count at their encoded size", param: "p", result: strings.Repeat(`<\"`, wf.MaxFileBytes/3) + tail,
			wantCut: true, wantDropped: func(kept int) int64 { return int64(wf.MaxFileBytes/3*3 + len(tail) - kept) }},
		{name: "a cut never splits a character", param: "p", result: strings.Repeat("é", wf.MaxFileBytes/2) + tail,
			wantCut: true, wantDropped: func(kept int) int64 { return int64(wf.MaxFileBytes/2*2 + len(tail) - kept) }},
		{name: "a document is never cut: the clear error", param: "p", result: `["` + strings.Repeat("k", wf.MaxFileBytes) + `"]`, document: true,
			wantErr: "the biggest is script result"},
		{name: "parameters over the budget alone are the clear error", param: strings.Repeat("p", 250*1024), result: "r",
			wantErr: "the biggest is output parameter big (256000 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-1", Namespace: "ns",
				Annotations: map[string]string{wf.AnnotationTemplate: strings.Repeat("t", templateBytes)}}}
			client, _ := validatingClient(pod)
			r := &PodReporter{Pods: client.CoreV1().Pods("ns"), Namespace: "ns", Name: "wf-1"}
			res := tt.result
			out := &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "big", Value: wf.AnyStringPtr(tt.param)}}, Result: &res,
				ResultTruncated: tt.dropped > 0, ResultDroppedBytes: tt.dropped, ResultIsLog: !tt.document}
			err := r.Report(context.Background(), out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Report error %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Report: %v", err)
			}
			got, err := client.CoreV1().Pods("ns").Get(context.Background(), "wf-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for k, v := range got.Annotations {
				total += len(k) + len(v)
			}
			if total > wf.MaxAnnotationBytes {
				t.Errorf("annotations are %d bytes, over the API server's %d", total, wf.MaxAnnotationBytes)
			}
			var back wf.NodeOutputs
			if err := json.Unmarshal([]byte(got.Annotations[wf.AnnotationOutputs]), &back); err != nil {
				t.Fatal(err)
			}
			if back.Result == nil || !strings.HasSuffix(tt.result, *back.Result) || !strings.HasSuffix(*back.Result, tail) && tt.wantCut {
				t.Fatalf("result is not a tail of main's output ending in %q", tail)
			}
			kept := len(*back.Result)
			if back.ResultTruncated != tt.wantCut || back.ResultDroppedBytes != tt.wantDropped(kept) {
				t.Errorf("truncated=%v dropped=%d, want %v and %d", back.ResultTruncated, back.ResultDroppedBytes, tt.wantCut, tt.wantDropped(kept))
			}
			if !utf8.ValidString(*back.Result) || strings.ContainsRune(*back.Result, utf8.RuneError) {
				t.Error("the kept result has a broken character")
			}
			if tt.wantCut && wf.MaxAnnotationBytes-total > 16 {
				t.Errorf("the cut left %d bytes of the budget unused: it must keep all that fits", wf.MaxAnnotationBytes-total)
			}
		})
	}
}

// TestPodReporter: outputs land in the outputs annotation with one request
// (a patch); outputs that fit the 256 KiB budget alone but not beside the
// pod's template annotation are refused by the API server (here a reactor
// that checks the budget as its validation does), and the error names the
// biggest output and the bytes the template takes; outputs over the budget
// alone are refused before any request.
func TestPodReporter(t *testing.T) {
	const templateBytes = 200 * 1024
	tests := []struct {
		name      string
		value     string
		wantErr   []string
		wantPatch bool
		wantCalls []string
	}{
		{name: "fits", value: "42", wantPatch: true, wantCalls: []string{"patch pods"}},
		{name: "over the budget left by the template", value: strings.Repeat("x", 100*1024),
			wantErr:   []string{"output parameter big (102400 bytes)", "output artifact", "other annotations use", "204800 of them the template", wf.AnnotationTemplate},
			wantCalls: []string{"patch pods", "get pods"}},
		{name: "over the budget alone", value: strings.Repeat("x", 300*1024),
			wantErr: []string{"output parameter big (307200 bytes)", "output artifact"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-1", Namespace: "ns",
				Annotations: map[string]string{wf.AnnotationTemplate: strings.Repeat("t", templateBytes)}}}
			client, calls := validatingClient(pod)
			r := &PodReporter{Pods: client.CoreV1().Pods("ns"), Namespace: "ns", Name: "wf-1"}
			code := 0
			out := &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "big", Value: wf.AnyStringPtr(tt.value)}}, ExitCode: &code}
			err := r.Report(context.Background(), out)
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Report error %v does not contain %q", err, w)
				}
			}
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatalf("Report: %v", err)
			}
			if !slices.Equal(*calls, tt.wantCalls) {
				t.Errorf("requests %q, want %q", calls, tt.wantCalls)
			}
			got, err := client.CoreV1().Pods("ns").Get(context.Background(), "wf-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, patched := got.Annotations[wf.AnnotationOutputs]
			if patched != tt.wantPatch {
				t.Fatalf("outputs annotation present = %v, want %v", patched, tt.wantPatch)
			}
			if !patched {
				return
			}
			var back wf.NodeOutputs
			if err := json.Unmarshal([]byte(a), &back); err != nil {
				t.Fatalf("outputs annotation %q: %v", a, err)
			}
			if len(back.Parameters) != 1 || string(*back.Parameters[0].Value) != tt.value || back.ExitCode == nil || *back.ExitCode != 0 {
				t.Errorf("outputs annotation = %s", a)
			}
			if len(got.Annotations[wf.AnnotationTemplate]) != templateBytes {
				t.Error("the patch changed the template annotation")
			}
		})
	}
}

// BenchmarkPodReporter reports the API requests one Report of a small step's
// outputs makes (requests/op) and its cost on a fake clientset.
//
//	go test -run '^$' -bench PodReporter ./executor/
func BenchmarkPodReporter(b *testing.B) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wf-1", Namespace: "ns",
		Annotations: map[string]string{wf.AnnotationTemplate: strings.Repeat("t", 2048)}}}
	client := fake.NewClientset(pod)
	requests := 0
	client.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		requests++
		return false, nil, nil
	})
	r := &PodReporter{Pods: client.CoreV1().Pods("ns"), Namespace: "ns", Name: "wf-1"}
	result := "hello"
	out := &wf.NodeOutputs{Parameters: []wf.Parameter{{Name: "out", Value: wf.AnyStringPtr("42")}}, Result: &result}
	for b.Loop() {
		if err := r.Report(context.Background(), out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
}

// validatingClient is a fake clientset holding pod that records each
// request ("patch pods") and refuses, as the API server's validation does
// (422), a patch that would take the pod's annotations past
// MaxAnnotationBytes.
func validatingClient(pod *corev1.Pod) (*fake.Clientset, *[]string) {
	client := fake.NewClientset(pod)
	calls := new([]string)
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*calls = append(*calls, a.GetVerb()+" "+a.GetResource().Resource)
		p, ok := a.(k8stesting.PatchAction)
		if !ok {
			return false, nil, nil
		}
		var patch struct {
			Metadata struct{ Annotations map[string]string } `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &patch); err != nil {
			return true, nil, err
		}
		total := 0
		for k, v := range pod.Annotations {
			if _, replaced := patch.Metadata.Annotations[k]; !replaced {
				total += len(k) + len(v)
			}
		}
		for k, v := range patch.Metadata.Annotations {
			total += len(k) + len(v)
		}
		if total > wf.MaxAnnotationBytes {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, field.ErrorList{
				field.TooLong(field.NewPath("metadata", "annotations"), "", wf.MaxAnnotationBytes)})
		}
		return false, nil, nil
	})
	return client, calls
}

// TestFitResultRecountsReplacedBytes: a cut that drops the bytes that are
// not UTF-8 drops what the outputs say of them; one that keeps some counts
// those and moves the first offset past what it dropped.
func TestFitResultRecountsReplacedBytes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		result string
		want   *wf.ResultReplacement
	}{
		{name: "bad byte cut off", result: "\xff" + strings.Repeat("x", 1000), want: nil},
		{name: "bad byte kept", result: "\xff" + strings.Repeat("x", 1000) + "\xfe", want: &wf.ResultReplacement{Bytes: 1, FirstOffset: 10 + 1001}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.result
			o := &wf.NodeOutputs{Result: &r, ResultIsLog: true, ResultTruncated: true, ResultDroppedBytes: 10,
				ResultReplaced: &wf.ResultReplacement{Bytes: int64(strings.Count(r, "\xff") + strings.Count(r, "\xfe")), FirstOffset: 10}}
			b, dropped, err := flow.FitResult(o, 300)
			if err != nil || dropped == 0 {
				t.Fatalf("FitResult = %d dropped, %v; want a cut", dropped, err)
			}
			if !reflect.DeepEqual(o.ResultReplaced, tt.want) {
				t.Errorf("resultReplaced after the cut = %+v, want %+v", o.ResultReplaced, tt.want)
			}
			var back wf.NodeOutputs
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.ResultReplaced, tt.want) {
				t.Errorf("encoded resultReplaced = %+v (%v), want %+v", back.ResultReplaced, err, tt.want)
			}
		})
	}
}
