package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

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
		fmt.Fprintf(tw, "  result\t\t%s\n", r)
	}
	if exitCode != nil {
		fmt.Fprintf(tw, "  exitCode\t\t%d (main's status)\n", *exitCode)
	}
	tw.Flush()
}

// cell makes a value fit one table cell: quoted if it has line breaks or
// tabs, cut if long.
func cell(v string) string {
	v = strings.TrimSuffix(v, "\n")
	if strings.ContainsAny(v, "\n\t") {
		v = strconv.Quote(v)
	}
	if len(v) > maxValueWidth {
		return fmt.Sprintf("%s... (%d bytes)", v[:maxValueWidth], len(v))
	}
	return v
}

// location is where an uploaded artifact is.
func location(a workflow.Artifact) string {
	switch {
	case a.S3 != nil:
		return "s3://" + a.S3.Bucket + "/" + a.S3.Key
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

// failureReason is the pod's reason, else main's, else wait's.
func failureReason(pod *corev1.Pod) string {
	if pod.Status.Reason != "" || pod.Status.Message != "" {
		return strings.TrimSpace(pod.Status.Reason + " " + pod.Status.Message)
	}
	var parts []string
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			parts = append(parts, fmt.Sprintf("%s exited %d (%s)", cs.Name, t.ExitCode, strings.TrimSpace(t.Reason+" "+t.Message)))
		}
	}
	return strings.Join(parts, "; ")
}

// printLogTail prints the last lines of main's and wait's logs; wait's log
// says why outputs could not be collected.
func printLogTail(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, lines int64, out io.Writer) {
	for _, name := range []string{workflow.MainContainerName, workflow.WaitContainerName} {
		fmt.Fprintf(out, "--- %s log (last %d lines) ---\n", name, lines)
		rc, err := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: name, TailLines: &lines}).Stream(ctx)
		if err != nil {
			fmt.Fprintf(out, "(could not read the log: %v)\n", err)
			continue
		}
		_, err = io.Copy(out, rc)
		rc.Close()
		if err != nil {
			fmt.Fprintf(out, "\n(log cut: %v)\n", err)
		}
		fmt.Fprintln(out)
	}
}
