//go:build e2e && bench

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestOutputsLatency measures, under our controller's pod shape, how long after main's exit
// the outputs land: containerd's /tasks/exit event for main (nanoseconds, `ctr events`) to the
// pod watch event that first carries the outputs annotation. The step is the anchor's
// (anchor-figures.md): a script `echo hello; echo 42 > /work/out` with an output parameter from
// /work/out on an emptyDir, and the script's result, so the report needs one log read and one
// file read. Two shapes: "short", main as is, which lives a few milliseconds and has exited
// before wait's exec session reaches it (under our controller wait is the second container, so
// it usually starts after main has exited); and "attached", main sleeping 1 s first, so that
// wait is watching it through an exec session when it exits.
//
// ARGOEXEC_E2E_LATENCY_RUNS (default 3) runs per backend and image; ARGOEXEC_E2E_BASELINE_IMAGE,
// when set, is a second executor image (say, main's build) run interleaved with ours, so that
// before and after come from one run:
//
//	ARGOEXEC_E2E_TAGS=e2e,bench ARGOEXEC_E2E_LATENCY_RUNS=9 ARGOEXEC_E2E_BASELINE_IMAGE=argoexec:base \
//	  hack/e2e.sh -run TestOutputsLatency
//
// It also counts the kubelet's `/pods` reads during each step (its request metrics: they count
// every client, so other tests running beside it add to them; the table gives the fewest).
// It asserts only that every step reported the right outputs.
func TestOutputsLatency(t *testing.T) {
	runs := argoEnvInt("ARGOEXEC_E2E_LATENCY_RUNS", 3)
	images := []string{}
	if b := os.Getenv("ARGOEXEC_E2E_BASELINE_IMAGE"); b != "" {
		images = append(images, b)
	}
	te := startTaskExits(t)
	for _, c := range []struct{ backend, shape, script string }{
		{wf.ExecutorK8sAPI, "short", anchorScript},
		{wf.ExecutorK8sAPI, "attached", "sleep 1; " + anchorScript},
		{wf.ExecutorKubelet, "short", anchorScript},
		{wf.ExecutorKubelet, "attached", "sleep 1; " + anchorScript},
	} {
		backend := c.backend
		t.Run(backend+"/"+c.shape, func(t *testing.T) {
			e := newWfEnv(t, backend)
			kc, err := kubeletMetricsClient(e.f.Env)
			if err != nil {
				t.Fatal(err)
			}
			imgs := append(slices.Clone(images), e.cfg.Executor.Image)
			lat := map[string][]time.Duration{}
			podsReads := map[string][]int{}
			for i := range runs {
				for j, img := range imgs {
					e.cfg.Executor.Image = img
					name := fmt.Sprintf("lat-%s-%d-%d", c.shape, j, i)
					d, reads := e.measureOutputs(t, te, kc, name, c.script)
					t.Logf("%s %s %s: main exit -> outputs annotation %s, kubelet GET /pods %d", backend, c.shape, img, d.Round(time.Millisecond), reads)
					lat[img] = append(lat[img], d)
					podsReads[img] = append(podsReads[img], reads)
				}
			}
			for _, img := range imgs {
				l := slices.Clone(lat[img])
				slices.Sort(l)
				r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
				t.Logf("%s, %s main, image %s, %d runs: main exit -> outputs reported p50 %s, p90 %s, min %s, max %s; kubelet GET /pods per step, fewest %d (all %v)",
					backend, c.shape, img, len(l), r(l[len(l)/2]), r(l[len(l)*9/10]), r(l[0]), r(l[len(l)-1]), slices.Min(podsReads[img]), podsReads[img])
			}
		})
	}
}

// anchorScript is the anchor's step (anchor-figures.md).
const anchorScript = "echo hello; echo 42 > /work/out"

// measureOutputs runs the anchor's step, with main running script, as pod name and returns the time from main's exit to
// the outputs annotation, and how many kubelet `GET /pods` the step saw.
func (e *wfEnv) measureOutputs(t *testing.T, te *taskExits, kc *http.Client, name, script string) (time.Duration, int) {
	t.Helper()
	tmpl := &wf.Template{Name: "anchor", Script: &wf.ScriptTemplate{
		Container: *e.busybox(""),
		Source:    script,
	}}
	tmpl.Script.Command = []string{"sh"}
	tmpl.Volumes, _ = workVolume()
	tmpl.Outputs.Parameters = []wf.Parameter{{Name: "out", ValueFrom: &wf.ValueFrom{Path: "/work/out"}}}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := e.f.Client.CoreV1().Pods(e.f.Namespace)
	w, err := client.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	before, kerr := kubeletRequests(kc, e.f.Env)
	var reported time.Time
	var final *corev1.Pod
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Error {
				continue
			}
			if reported.IsZero() && p.Annotations[wf.AnnotationOutputs] != "" {
				reported = time.Now()
			}
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				final = p
				return
			}
		}
	}()
	r := e.run(t, name, tmpl, nil, false)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("%s: the test's pod watch did not see the pod finish", name)
	}
	if final == nil || r.pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("%s: phase %s, want Succeeded", name, r.pod.Status.Phase)
	}
	if got := r.param(t, "out"); got != "42" {
		t.Fatalf("%s: output parameter out = %q, want 42", name, got)
	}
	if r.outputs.Result == nil || *r.outputs.Result != "hello" {
		t.Fatalf("%s: result %v, want hello", name, r.outputs.Result)
	}
	reads := -1
	if after, err := kubeletRequests(kc, e.f.Env); err == nil && kerr == nil {
		reads = after["GET pods"] - before["GET pods"]
	}
	var mainID, waitID string
	for _, cs := range final.Status.ContainerStatuses {
		id := strings.TrimPrefix(cs.ContainerID, "containerd://")
		switch cs.Name {
		case wf.MainContainerName:
			mainID = id
		case wf.WaitContainerName:
			waitID = id
		}
	}
	ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
	defer ecancel()
	exited, err := te.exitOf(ectx, mainID)
	if err != nil {
		t.Fatal(err)
	}
	if reported.IsZero() {
		t.Fatalf("%s: the pod watch never showed the outputs annotation", name)
	}
	if started, ok := te.startOf(waitID); ok {
		// The kubelet starts a pod's containers one after the other, in the spec's order: wait,
		// second, starts a container start after main, so after a main shorter than that.
		ms := "?"
		if mainStarted, ok := te.startOf(mainID); ok {
			ms = fmt.Sprintf("%s after main's start; main ran %s", started.Sub(mainStarted).Round(time.Millisecond), exited.Sub(mainStarted).Round(time.Millisecond))
		}
		t.Logf("%s: wait's task started %s after main's exit (%s)", name, started.Sub(exited).Round(time.Millisecond), ms)
	}
	return reported.Sub(exited), reads
}
