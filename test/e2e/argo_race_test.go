//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// TestArgoOutputsRace, under Argo v3.3.8's controller: v3.3.8 has no "outputs complete"
// handshake (a node can be marked Succeeded before its WorkflowTaskResult is in the controller's
// cache, and a downstream `{{steps.X.outputs...}}` then fails to resolve).
// ARGOEXEC_E2E_ARGO_RACE_RUNS (default 20) runs per backend of a two-step workflow that passes a
// parameter and a result, with our image, 10 at a time; every run must succeed with the values
// reaching the second step. (Its figures, TestArgoFigures, are in argo_bench_test.go, build tag
// bench.)

// argoRaceWorkflow passes a parameter (from a file on an emptyDir) and the script result from
// one step to the next; both values are unique to the run.
const argoRaceWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: outputs-race-
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: gen
        template: gen
    - - name: use
        template: use
        arguments:
          parameters:
          - {name: param, value: "{{steps.gen.outputs.parameters.out}}"}
          - {name: result, value: "{{steps.gen.outputs.result}}"}
  - name: gen
    script:
      image: alpine:3.7
      command: [sh]
      source: |
        echo {{workflow.name}}-result
        echo {{workflow.name}}-param > /out/value
      volumeMounts: [{name: out, mountPath: /out}]
    volumes: [{name: out, emptyDir: {}}]
    outputs:
      parameters:
      - name: out
        valueFrom: {path: /out/value}
  - name: use
    inputs:
      parameters: [{name: param}, {name: result}]
    container:
      image: alpine:3.7
      command: [sh, -c, "echo param={{inputs.parameters.param}} result={{inputs.parameters.result}}"]
`

func argoEnvInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

func runLabelFor(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// argoFor connects to one controller (by name) and deletes the run's workflows at the end.
func argoFor(t *testing.T, name, runLabel string) *framework.Argo {
	t.Helper()
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ctrls {
		if c.Name != name {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a, err := framework.NewArgo(ctx, c, runLabel)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if os.Getenv("ARGOEXEC_E2E_ARGO_KEEP") == "1" {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.DeleteRun(ctx); err != nil {
				t.Logf("deleting the run's workflows in %s: %v", c.Namespace, err)
			}
		})
		return a
	}
	t.Skipf("controller %q not in ARGOEXEC_E2E_ARGO_IMAGES", name)
	return nil
}

func TestArgoOutputsRace(t *testing.T) {
	runs := argoEnvInt("ARGOEXEC_E2E_ARGO_RACE_RUNS", 20)
	parallel := argoEnvInt("ARGOEXEC_E2E_ARGO_RACE_PARALLEL", 10)
	a := argoFor(t, "ours", runLabelFor("race"))
	type result struct {
		backend, name, phase, message string
		took                          time.Duration
		gap                           time.Duration // gen finished -> use started (controller's times, seconds)
		ok                            bool
	}
	var mu sync.Mutex
	var results []result
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	t0 := time.Now()
	for _, backend := range []string{"k8sapi", "kubelet"} {
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				t.Run(fmt.Sprintf("%s/%02d", backend, i), func(t *testing.T) {
					r := result{backend: backend}
					defer func() {
						mu.Lock()
						results = append(results, r)
						mu.Unlock()
					}()
					wf, err := framework.ParseWorkflow([]byte(argoRaceWorkflow))
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
					defer cancel()
					start := time.Now()
					created, err := a.Submit(ctx, wf, backend)
					if err != nil {
						t.Fatal(err)
					}
					r.name = created.GetName()
					final, err := a.WaitForWorkflow(ctx, r.name)
					r.took = time.Since(start)
					if err != nil {
						t.Fatal(err)
					}
					o, err := a.Collect(ctx, final)
					if err != nil {
						t.Logf("collecting %s: %v", r.name, err)
					}
					r.phase, r.message = o.Phase, o.Message
					r.gap = nodeGap(final, "gen", "use")
					defer func() {
						if t.Failed() {
							t.Logf("MISSED: %s: phase %s, message %q, gen finished -> use started %s, submitted -> done %s\n%s",
								r.name, o.Phase, o.Message, r.gap, r.took.Round(100*time.Millisecond), a.Describe(context.Background(), o))
						}
					}()
					if o.Phase != "Succeeded" {
						t.Fatalf("workflow %s: %s (%q), want Succeeded", r.name, o.Phase, o.Message)
					}
					gen := mustNode(t, o, "gen", "Succeeded")
					wantParam(t, gen, "out", r.name+"-param")
					use := mustNode(t, o, "use", "Succeeded")
					if got := use.InputParameters["param"]; got != r.name+"-param" {
						t.Errorf("use: input param %q, want %q", got, r.name+"-param")
					}
					if got := use.InputParameters["result"]; got != r.name+"-result" {
						t.Errorf("use: input result %q, want %q", got, r.name+"-result")
					}
					wantLogContains(t, use, "param="+r.name+"-param result="+r.name+"-result")
					r.ok = !t.Failed()
				})
			}()
		}
	}
	wg.Wait()
	for _, backend := range []string{"k8sapi", "kubelet"} {
		var n, ok int
		var tooks, gaps []time.Duration
		for _, r := range results {
			if r.backend != backend {
				continue
			}
			n++
			if r.ok {
				ok++
			}
			tooks = append(tooks, r.took)
			gaps = append(gaps, r.gap)
		}
		t.Logf("outputs race, ours, %s: %d/%d runs Succeeded with both values downstream (%d missed); submitted -> done median %s; gen finished -> use started median %s, max %s",
			backend, ok, n, n-ok, argoMedian(tooks).Round(100*time.Millisecond), argoMedian(gaps), argoMax(gaps))
	}
	t.Logf("%d workflows in %s, %d at a time", len(results), time.Since(t0).Round(time.Second), parallel)
}

// nodeGap: the controller's finishedAt of node `from` to startedAt of node `to` (whole seconds).
func nodeGap(wf *unstructured.Unstructured, from, to string) time.Duration {
	nodes, _, _ := unstructured.NestedMap(wf.Object, "status", "nodes")
	var fin, start time.Time
	for _, raw := range nodes {
		nm, _ := raw.(map[string]any)
		d, _, _ := unstructured.NestedString(nm, "displayName")
		switch d {
		case from:
			s, _, _ := unstructured.NestedString(nm, "finishedAt")
			fin, _ = time.Parse(time.RFC3339, s)
		case to:
			s, _, _ := unstructured.NestedString(nm, "startedAt")
			start, _ = time.Parse(time.RFC3339, s)
		}
	}
	if fin.IsZero() || start.IsZero() {
		return -1
	}
	return start.Sub(fin)
}

func argoMedian(d []time.Duration) time.Duration { return argoQuantile(d, 0.5) }

// argoQuantile is the quantile by the nearest rank.
func argoQuantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

func argoMax(d []time.Duration) time.Duration { return argoQuantile(d, 1) }
