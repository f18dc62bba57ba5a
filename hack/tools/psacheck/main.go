// Command psacheck evaluates pods against a Pod Security level with the API
// server's own checks (k8s.io/pod-security-admission) and prints, per pod,
// whether the level admits it and the details naming the containers; with
// -executor-only it first drops every container but init and wait (main's
// security context is the user's). It reads a pod or a List of pods as JSON
// on stdin, e.g. what Argo's controller built:
//
//	kubectl -n argo-ours get pods -l workflows.argoproj.io/workflow=W -o json | psacheck -level restricted
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

func main() {
	level := flag.String("level", "restricted", "Pod Security level: privileged, baseline or restricted")
	executorOnly := flag.Bool("executor-only", false, "evaluate only the init and wait containers")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *level, *executorOnly); err != nil {
		fmt.Fprintln(os.Stderr, "psacheck:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, level string, executorOnly bool) error {
	lvl, err := psaapi.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("-level: %w", err)
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	var list corev1.PodList
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("decode the pods on stdin: %w", err)
	}
	if len(list.Items) == 0 {
		var pod corev1.Pod
		if err := json.Unmarshal(data, &pod); err != nil || pod.Name == "" {
			return fmt.Errorf("stdin holds no pod (want a Pod or a List of pods as JSON): %v", err)
		}
		list.Items = []corev1.Pod{pod}
	}
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return fmt.Errorf("pod security checks: %w", err)
	}
	lv := psaapi.LevelVersion{Level: lvl, Version: psaapi.LatestVersion()}
	for _, pod := range list.Items {
		spec := pod.Spec.DeepCopy()
		if executorOnly {
			notOurs := func(c corev1.Container) bool { return c.Name != "init" && c.Name != "wait" }
			spec.InitContainers = slices.DeleteFunc(spec.InitContainers, notOurs)
			spec.Containers = slices.DeleteFunc(spec.Containers, notOurs)
			spec.SecurityContext = nil
		}
		r := policy.AggregateCheckResults(ev.EvaluatePod(lv, &pod.ObjectMeta, spec))
		if r.Allowed {
			fmt.Fprintf(out, "%s: admitted by %s\n", pod.Name, lv)
			continue
		}
		var why []string
		for i, reason := range r.ForbiddenReasons {
			why = append(why, reason+" ("+r.ForbiddenDetails[i]+")")
		}
		fmt.Fprintf(out, "%s: refused by %s: %s\n", pod.Name, lv, strings.Join(why, ", "))
	}
	return nil
}
