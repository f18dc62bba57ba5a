//go:build e2e

// Command argodemo runs Argo Workflows v3.3.8 examples, read from the Argo module, through one
// of hack/argo.sh's controllers (Argo's own, unmodified workflow-controller) and prints each
// node's phase, outputs and timings. hack/demo.sh runs it with our argoexec (controller "ours")
// on k8sapi and kubelet. It reuses the e2e framework, so it builds with -tags e2e:
//
//	go build -tags e2e -o bin/argodemo ./hack/tools/argodemo
//	eval "$(hack/argo.sh env)"; bin/argodemo -controller ours -backend kubelet dag-diamond artifact-passing:emptydir
//
// An example named NAME:emptydir runs as its emptyDir variant (framework.EmptyDirVariant: an
// emptyDir at each output's directory, nothing else changed), which k8sapi and kubelet need for
// outputs. The environment is the e2e tier's (ARGOEXEC_E2E_*, hack/e2e.sh and hack/argo.sh env).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

func main() {
	controller := flag.String("controller", "ours", "hack/argo.sh controller: ours (argoexec:dev) or upstream (Argo's own argoexec)")
	backend := flag.String("backend", "k8sapi", "container runtime executor: k8sapi or kubelet")
	keep := flag.Bool("keep", false, "keep the workflows (default: delete each after printing it)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: argodemo [-controller ours] [-backend k8sapi] EXAMPLE[:emptydir]...")
		os.Exit(2)
	}
	failed := 0
	for _, ex := range flag.Args() {
		if err := run(*controller, *backend, ex, *keep); err != nil {
			fmt.Fprintf(os.Stderr, "argodemo: %s on %s: %v\n", ex, *backend, err)
			failed++
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}

func run(controller, backend, example string, keep bool) error {
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		return err
	}
	var ctrl *framework.ArgoController
	for i := range ctrls {
		if ctrls[i].Name == controller {
			ctrl = &ctrls[i]
		}
	}
	if ctrl == nil {
		return fmt.Errorf("controller %q not in ARGOEXEC_E2E_ARGO_IMAGES", controller)
	}
	mod, err := framework.ArgoModuleDir()
	if err != nil {
		return err
	}
	name, variant, _ := strings.Cut(example, ":")
	wf, err := framework.LoadWorkflow(filepath.Join(mod, "examples", name+".yaml"))
	if err != nil {
		return err
	}
	if variant == "emptydir" {
		mounted, err := framework.EmptyDirVariant(wf)
		if err != nil {
			return err
		}
		fmt.Printf("    (emptyDir variant: mounted at %v)\n", mounted)
	} else if variant != "" {
		return fmt.Errorf("unknown variant %q (emptydir)", variant)
	}
	ctx, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
	defer cancel()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	a, err := framework.NewArgo(ctx, *ctrl, "demo-"+hex.EncodeToString(b))
	if err != nil {
		return err
	}
	start := time.Now()
	created, err := a.Submit(ctx, wf, backend)
	if err != nil {
		return err
	}
	final, err := a.WaitForWorkflow(ctx, created.GetName())
	took := time.Since(start)
	if err != nil {
		return err
	}
	o, err := a.Collect(ctx, final)
	if err != nil {
		return err
	}
	pods, _ := a.WorkflowPods(ctx, o.Name)
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	fmt.Printf("workflow %s/%s (%s, executor image %s): %s in %.1f s (submitted -> phase seen)%s\n",
		a.Controller.Namespace, o.Name, backend, a.Controller.Image, o.Phase, took.Seconds(), msg(o.Message))
	nodes, _, _ := unstructured.NestedMap(final.Object, "status", "nodes")
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	// in start order
	startOf := func(id string) string {
		s, _, _ := unstructured.NestedString(nodes[id].(map[string]any), "startedAt")
		return s
	}
	sort.Slice(ids, func(i, j int) bool {
		if si, sj := startOf(ids[i]), startOf(ids[j]); si != sj {
			return si < sj
		}
		return ids[i] < ids[j]
	})
	for _, id := range ids {
		nm := nodes[id].(map[string]any)
		typ, _, _ := unstructured.NestedString(nm, "type")
		if typ != "Pod" {
			continue
		}
		display, _, _ := unstructured.NestedString(nm, "displayName")
		n := o.Node(display)
		if display == o.Name {
			n = o.Node("WF")
		}
		if n == nil {
			continue
		}
		s, _, _ := unstructured.NestedString(nm, "startedAt")
		f, _, _ := unstructured.NestedString(nm, "finishedAt")
		fmt.Printf("  node %-22s %-9s %s -> %s (controller)%s%s\n", display, n.Phase, clock(s), clock(f), podTimes(byName[id]), msg(n.Message))
		for _, k := range sortedKeys(n.InputParameters) {
			fmt.Printf("    input  %s = %q\n", k, n.InputParameters[k])
		}
		for _, k := range sortedKeys(n.Parameters) {
			fmt.Printf("    output %s = %q\n", k, n.Parameters[k])
		}
		if n.Result != nil {
			fmt.Printf("    result %q\n", *n.Result)
		}
		arts, _, _ := unstructured.NestedSlice(nm, "outputs", "artifacts")
		for _, raw := range arts {
			am, _ := raw.(map[string]any)
			an, _, _ := unstructured.NestedString(am, "name")
			key, _, _ := unstructured.NestedString(am, "s3", "key")
			if key == "" {
				continue
			}
			files := n.Artifacts[an]
			fmt.Printf("    artifact %s: s3 key %s, %d file(s)\n", an, key, len(files))
			for _, fn := range sortedKeys(files) {
				fmt.Printf("      %s: %q\n", fn, short(files[fn]))
			}
		}
		if l := strings.TrimSpace(n.MainLog); l != "" {
			fmt.Printf("    main log: %q\n", short(l))
		}
	}
	if !keep {
		if err := a.DeleteWorkflow(context.Background(), o.Name); err != nil {
			fmt.Fprintf(os.Stderr, "argodemo: deleting %s: %v\n", o.Name, err)
		}
	}
	if o.Phase != "Succeeded" {
		return fmt.Errorf("workflow %s: %s", o.Name, o.Phase)
	}
	return nil
}

// podTimes: the pod's creation, main's start and finish, and wait's finish, from its status
// (whole seconds, as the kubelet reports them).
func podTimes(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	var mainS, mainF, waitF metav1.Time
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated == nil {
			continue
		}
		switch cs.Name {
		case "main":
			mainS, mainF = cs.State.Terminated.StartedAt, cs.State.Terminated.FinishedAt
		case "wait":
			waitF = cs.State.Terminated.FinishedAt
		}
	}
	c := p.CreationTimestamp.Time
	rel := func(t metav1.Time) string {
		if t.IsZero() {
			return "?"
		}
		return fmt.Sprintf("+%.0fs", t.Sub(c).Seconds())
	}
	return fmt.Sprintf("; pod %s created %s, main %s..%s, wait done %s", p.Name, c.Format("15:04:05"), rel(mainS), rel(mainF), rel(waitF))
}

func clock(ts string) string {
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return "?"
	}
	return t.Local().Format("15:04:05")
}

func msg(m string) string {
	if m == "" {
		return ""
	}
	return fmt.Sprintf(" (%s)", m)
}

func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
