//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The Wait-latency benchmarks of k8sapi and kubelet share this: a pod whose main sleeps, prints
// /proc/uptime (the kernel's clock since boot, 10 ms steps, the same in the pod and in this
// process, which runs on the node; busybox date has no %N) and exits, with Wait running from
// before main exits.

// waitLatencyPod is the pod's containers: main as above, and a "wait" that only sleeps.
var waitLatencyPod = []executortest.Container{
	{Name: "main", Script: "sleep 2; cat /proc/uptime"},
	{Name: "wait", Script: "sleep 3600"},
}

// waitSample is one run: from main's exit to Wait returning, and to GetExitCode returning after
// it; fast says whether the backend's exec fast path (not the status) ended Wait.
type waitSample struct {
	wait, code time.Duration
	fast       bool
}

// waitPather is the optional interface of a backend with an exec fast path
// (executor/internal/podexec's WaitPaths): how many Waits the exec session
// ended, and how many the status.
type waitPather interface {
	WaitPaths() (exec, status int)
}

// minFastWaits is how many of 20 Waits the exec fast path must end (issue 10):
// the status may win a race now and then, never as a rule.
const minFastWaits = 18

// measureWait runs Wait and GetExitCode on x for main of pod (created with waitLatencyPod),
// reads when main exited from its log, and deletes the pod. x must say which path ended
// the Wait (waitPather).
func measureWait(t *testing.T, f *framework.Framework, pod string, x executor.ContainerRuntimeExecutor) waitSample {
	t.Helper()
	ctx := f.Context()
	wp, ok := x.(waitPather)
	if !ok {
		t.Fatalf("%T does not say which path ended a Wait (no WaitPaths method)", x)
	}
	exec0, _ := wp.WaitPaths()
	if err := x.Wait(ctx, []string{"main"}); err != nil {
		t.Fatalf("%s: Wait: %v", pod, err)
	}
	exec1, _ := wp.WaitPaths()
	returned, err := bootClock()
	if err != nil {
		t.Fatal(err)
	}
	if code, err := x.GetExitCode(ctx, "main"); err != nil || code != 0 {
		t.Fatalf("%s: GetExitCode = %d, %v", pod, code, err)
	}
	coded, err := bootClock()
	if err != nil {
		t.Fatal(err)
	}
	logs, err := f.PodLogs(ctx, pod, "main")
	if err != nil {
		t.Fatalf("%s: logs: %v", pod, err)
	}
	exited, err := parseUptime(logs)
	if err != nil {
		t.Fatalf("%s: main printed %q, want /proc/uptime: %v", pod, logs, err)
	}
	_ = f.Client.CoreV1().Pods(f.Namespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	return waitSample{wait: returned - exited, code: coded - exited, fast: exec1 > exec0}
}

// logWaitLatency logs the distribution of the samples and how many took each path, and
// returns how many the fast path ended.
func logWaitLatency(t *testing.T, label, fastPath, slowPath string, samples []waitSample) int {
	t.Helper()
	var lat, code []time.Duration
	fast := 0
	for _, s := range samples {
		lat, code = append(lat, s.wait), append(code, s.code)
		if s.fast {
			fast++
		}
	}
	slices.Sort(lat)
	slices.Sort(code)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("%s: Wait latency from main's exit, %d runs: p50 %s, p90 %s, min %s, max %s; %d runs ended by %s, %d by %s",
		label, len(lat), r(lat[len(lat)/2]), r(lat[len(lat)*9/10]), r(lat[0]), r(lat[len(lat)-1]), fast, fastPath, len(lat)-fast, slowPath)
	t.Logf("%s: GetExitCode after that Wait (it waits for the status to confirm the exit), from main's exit: p50 %s, p90 %s, max %s",
		label, r(code[len(code)/2]), r(code[len(code)*9/10]), r(code[len(code)-1]))
	return fast
}

// bootClock reads this machine's /proc/uptime.
func bootClock() (time.Duration, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	return parseUptime(string(b))
}

// parseUptime parses the first field of /proc/uptime ("12345.67 ...").
func parseUptime(s string) (time.Duration, error) {
	fs := strings.Fields(s)
	if len(fs) == 0 {
		return 0, errors.New("empty")
	}
	sec, err := strconv.ParseFloat(fs[0], 64)
	if err != nil {
		return 0, fmt.Errorf("not /proc/uptime: %q: %w", s, err)
	}
	return time.Duration(sec * float64(time.Second)), nil
}
