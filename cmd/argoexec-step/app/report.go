package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// maxValueWidth cuts long output values in the table; the annotation has them whole.
const maxValueWidth = 120

// printReport prints the phase, the outputs wait reported and the timings.
func printReport(out io.Writer, res *result) {
	pod := res.pod
	fmt.Fprintf(out, "pod %s/%s (executor %s): %s\n", pod.Namespace, pod.Name, res.executor, phaseOf(pod))
	PrintOutputs(out, pod.Annotations[workflow.AnnotationOutputs], MainExitCode(pod))
	printTimings(out, res)
}

func phaseOf(pod *corev1.Pod) string {
	if pod.Status.Phase == "" {
		return "(no phase yet)"
	}
	return string(pod.Status.Phase)
}

// MainExitCode is main's exit code from the pod's status, where the
// controller reads it (wait's report does not carry it); nil while main has
// not terminated.
func MainExitCode(pod *corev1.Pod) *int {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == workflow.MainContainerName && cs.State.Terminated != nil {
			code := int(cs.State.Terminated.ExitCode)
			return &code
		}
	}
	return nil
}

// PrintOutputs prints an outputs annotation (workflows.argoproj.io/outputs)
// as a table, with main's exit code from its status (nil: not known):
// `run` prints it, and so does hack/tools/dockernode.
func PrintOutputs(out io.Writer, annotation string, exitCode *int) {
	if annotation == "" {
		fmt.Fprintf(out, "outputs: none reported (no %s annotation)\n", workflow.AnnotationOutputs)
		return
	}
	var o workflow.NodeOutputs
	if err := json.Unmarshal([]byte(annotation), &o); err != nil {
		fmt.Fprintf(out, "outputs: annotation %s is not valid: %v\n", workflow.AnnotationOutputs, err)
		return
	}
	fmt.Fprintln(out, "outputs:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tNAME\tVALUE")
	for _, p := range o.Parameters {
		v := "(none)"
		if p.Value != nil {
			v = cell(p.Value.String())
		}
		fmt.Fprintf(tw, "  parameter\t%s\t%s\n", p.Name, v)
	}
	for _, a := range o.Artifacts {
		fmt.Fprintf(tw, "  artifact\t%s\t%s\n", a.Name, location(a))
	}
	if o.Result != nil {
		r := cell(*o.Result)
		if o.ResultTruncated {
			r += fmt.Sprintf(" (truncated: the first %d bytes of main's output dropped)", o.ResultDroppedBytes)
		}
		if o.ResultReplaced != nil {
			r += " (" + o.ResultReplaced.String() + ")"
		}
		if o.ResultIncomplete != "" {
			r += " (may be incomplete: " + o.ResultIncomplete + ")"
		}
		fmt.Fprintf(tw, "  result\t\t%s\n", r)
	}
	if exitCode != nil {
		fmt.Fprintf(tw, "  exitCode\t\t%d (main's status)\n", *exitCode)
	}
	tw.Flush()
}

// cell makes a value fit one table cell: quoted if it has line breaks or
// tabs, cut if long (on a character boundary, never inside one).
func cell(v string) string {
	v = strings.TrimSuffix(v, "\n")
	if strings.ContainsAny(v, "\n\t") {
		v = strconv.Quote(v)
	}
	if len(v) > maxValueWidth {
		cut := maxValueWidth
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		return fmt.Sprintf("%s... (%d bytes)", v[:cut], len(v))
	}
	return v
}

// location is where an uploaded artifact is.
func location(a workflow.Artifact) string {
	switch {
	case a.S3 != nil:
		return "s3://" + a.S3.Bucket + "/" + a.S3.Key
	case a.GCS != nil:
		return "gs://" + a.GCS.Bucket + "/" + a.GCS.Key
	case a.OSS != nil:
		return "oss://" + a.OSS.Bucket + "/" + a.OSS.Key + " at " + a.OSS.Endpoint
	case a.Artifactory != nil:
		return a.Artifactory.URL
	case a.Git != nil:
		return a.Git.Repo
	case a.HTTP != nil:
		return a.HTTP.URL
	case a.Raw != nil:
		return fmt.Sprintf("raw (%d bytes)", len(a.Raw.Data))
	}
	return "(no location)"
}

// printTimings prints the durations the run observed through its watch.
func printTimings(out io.Writer, res *result) {
	fmt.Fprintln(out, "timings:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  created -> running\t%s\n", span(res.created, res.running))
	fmt.Fprintf(tw, "  running -> finished\t%s\n", span(res.running, res.finished))
	fmt.Fprintf(tw, "  created -> finished\t%s\n", span(res.created, res.finished))
	tw.Flush()
}

func span(from, to time.Time) string {
	if from.IsZero() || to.IsZero() {
		return "-"
	}
	return to.Sub(from).Round(time.Millisecond).String()
}

// containerEnd is how one container of a finished pod ended, as `run`
// reports it.
type containerEnd struct {
	// name is the container's; kind says which it is: init container,
	// sidecar, main or wait.
	name, kind string
	// started says it ran (its log exists); failed that it made the step fail.
	started, failed bool
	// state says how it ended ("exited 1 (Error)", "never started
	// (PodInitializing)"); message is its termination or waiting message.
	state, message string
}

// containerEnds lists the pod's containers in the order they run (init
// containers and native sidecars, then main, wait and the other sidecars),
// each with how it ended. A container that exited non-zero failed, except
// a sidecar stopped by a signal at the end of the pod (exit 137 or 143); so
// did one the kubelet could not start (an image pull or configuration
// error), while one still waiting for an earlier container never started.
func containerEnds(pod *corev1.Pod) []containerEnd {
	sidecar := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecar[c.Name] = true
		}
	}
	var ends []containerEnd
	add := func(cs corev1.ContainerStatus, kind string) {
		if sidecar[cs.Name] {
			kind = "sidecar"
		}
		e := containerEnd{name: cs.Name, kind: kind}
		switch st := cs.State; {
		case st.Terminated != nil:
			t := st.Terminated
			e.started, e.message = true, strings.TrimSpace(t.Message)
			e.state = fmt.Sprintf("exited %d (%s)", t.ExitCode, t.Reason)
			e.failed = t.ExitCode != 0 && !(kind == "sidecar" && (t.ExitCode == 137 || t.ExitCode == 143))
		case st.Waiting != nil:
			w := st.Waiting
			e.state, e.message = fmt.Sprintf("never started (%s)", w.Reason), strings.TrimSpace(w.Message)
			e.failed = w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating"
			e.started = cs.RestartCount > 0
		case st.Running != nil:
			e.started, e.state = true, "still running"
		default: // not known: its log may tell
			e.started, e.state = true, "no state reported"
		}
		ends = append(ends, e)
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		add(cs, "init container")
	}
	for _, cs := range pod.Status.ContainerStatuses {
		kind := "sidecar"
		if cs.Name == workflow.MainContainerName || cs.Name == workflow.WaitContainerName {
			kind = cs.Name
		}
		add(cs, kind)
	}
	for _, name := range []string{workflow.MainContainerName, workflow.WaitContainerName} {
		if !slices.ContainsFunc(ends, func(e containerEnd) bool { return e.name == name }) {
			add(corev1.ContainerStatus{Name: name}, name)
		}
	}
	return ends
}

// failureReason is the pod's reason, else every failed container's name,
// how it ended and its message (init, main, wait or a sidecar).
func failureReason(pod *corev1.Pod) string {
	if pod.Status.Reason != "" || pod.Status.Message != "" {
		return strings.TrimSpace(pod.Status.Reason + " " + pod.Status.Message)
	}
	var parts []string
	for _, e := range containerEnds(pod) {
		if !e.failed {
			continue
		}
		part := e.name + " " + e.state
		if e.message != "" {
			part += ": " + firstLine(e.message)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// printFailure prints, for every container that failed, how it ended, its
// termination message and the tail of its log, then the log tails of main
// and wait if they ran (wait's log says why outputs could not be
// collected); a container that never started is one line saying so, not
// an empty log.
func printFailure(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, lines int64, out io.Writer) {
	ends := containerEnds(pod)
	printed := map[string]bool{}
	for _, e := range ends {
		if !e.failed {
			continue
		}
		fmt.Fprintf(out, "--- %s (%s) failed: %s ---\n", e.name, e.kind, e.state)
		if e.message != "" {
			fmt.Fprintf(out, "message:\n%s\n", indent(e.message))
		} else {
			fmt.Fprintln(out, "message: (none)")
		}
		if e.started {
			printLog(ctx, client, pod, e.name, lines, out)
		}
		printed[e.name] = true
	}
	for _, e := range ends {
		if printed[e.name] || (e.name != workflow.MainContainerName && e.name != workflow.WaitContainerName) {
			continue
		}
		if !e.started {
			fmt.Fprintf(out, "--- %s: %s: no log ---\n", e.name, e.state)
			continue
		}
		printLog(ctx, client, pod, e.name, lines, out)
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// printLog prints the last lines of one container's log.
func printLog(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, name string, lines int64, out io.Writer) {
	fmt.Fprintf(out, "--- %s log (last %d lines) ---\n", name, lines)
	rc, err := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: name, TailLines: &lines}).Stream(ctx)
	if err != nil {
		fmt.Fprintf(out, "(could not read the log: %v)\n", err)
		return
	}
	_, err = io.Copy(out, rc)
	rc.Close()
	if err != nil {
		fmt.Fprintf(out, "\n(log cut: %v)\n", err)
	}
	fmt.Fprintln(out)
}
