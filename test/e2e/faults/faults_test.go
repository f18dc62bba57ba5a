//go:build e2e

// Package faults is the fault suite (hack/e2e-faults.sh, `make e2e-faults`): each case runs a
// step whose outputs are known on every backend at once, injects one fault into the real
// testbed (hack/cluster.sh kill, down, pause or up of one component) while wait waits for main
// or saves its outputs, and asserts that the reported outputs are complete and byte-exact, or
// that the step failed with an error naming the fault. Every case is bounded; none waits on a
// guess: the test and main meet in a host directory, and the test reads wait's log on the node.
//
// It stops components the other e2e runs need, so it runs alone (ARGOEXEC_E2E_EXCLUSIVE=1), and
// its TestMain refuses to run unless the run holds the testbed lock exclusively (main_test.go).
package faults

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/executor/emissary"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// caseTimeout bounds one fault case, both backends together.
const caseTimeout = 3 * time.Minute

// outage is how long a stopped API server stays down.
const outage = 10 * time.Second

// containerdDownAfterExit is how long containerd stays down after main has exited: longer
// than the late report (3 s past finishedAt) that makes wait look at main's log.
const containerdDownAfterExit = 6 * time.Second

// etcdStall is how long etcd stays paused once wait is reporting.
const etcdStall = 8 * time.Second

// backends: k8sapi, kubelet and emissary run real pods on this testbed's kubelet; docker runs
// main and wait on dockerd (dockerRun).
var backends = []string{wf.ExecutorK8sAPI, wf.ExecutorKubelet, emissary.ExecutorEmissary, wf.ExecutorDocker}

// fault is one case: inject runs once every step's wait waits for main, and must release main
// (step.release) and undo the fault; check judges each step and returns its outcome.
type fault struct {
	name   string
	skip   map[string]string // backend -> why the fault does not apply
	setup  func(ctx context.Context, t *testing.T, e *framework.StepEnv)
	mutate func(ctx context.Context, t *testing.T, s *step, pod *corev1.Pod)
	inject func(ctx context.Context, t *testing.T, tb testbed, steps []*step)
	check  func(ctx context.Context, t *testing.T, s *step) string
}

// intact waits for the pod to end and checks every output.
func intact(ctx context.Context, t *testing.T, s *step) string {
	p, err := s.finish(ctx)
	if err != nil {
		t.Fatalf("%v\nwait log:\n%s", err, s.waitLog())
	}
	s.checkIntact(ctx, t, p)
	return "outputs intact"
}

func releaseAll(ctx context.Context, t *testing.T, steps []*step) {
	t.Helper()
	for _, s := range steps {
		s.release(t)
	}
	for _, s := range steps {
		if err := s.untilMainDone(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func faults() []fault {
	return []fault{
		{
			name: "S3Unreachable",
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				tb.kill(t, "s3")
				releaseAll(ctx, t, steps)
				for _, s := range steps {
					if err := s.untilLogged(ctx, "wait finished"); err != nil {
						t.Fatal(err)
					}
				}
				tb.up(t, "s3")
			},
			check: func(ctx context.Context, t *testing.T, s *step) string {
				p, err := s.finish(ctx)
				if err != nil {
					t.Fatal(err)
				}
				log := s.waitLog()
				if p.Status.Phase != corev1.PodFailed {
					t.Errorf("phase %s, want Failed (the artifact could not be saved)", p.Status.Phase)
				}
				msg := waitMessage(p)
				for _, want := range []string{`output artifact "out"`, s.e.Config.ArtifactRepository.S3.Endpoint} {
					if !strings.Contains(msg, want) {
						t.Errorf("wait's termination message does not name %q: %q", want, msg)
					}
				}
				o := outputs(t, p)
				if o == nil || len(o.Parameters) != 1 || o.Parameters[0].Value == nil || string(*o.Parameters[0].Value) != s.answer {
					t.Errorf("outputs %+v: want the parameter reported byte-exact beside the failed artifact", o)
				}
				if o != nil && len(o.Artifacts) != 0 {
					t.Errorf("artifacts %+v reported although S3 was down", o.Artifacts)
				}
				s.checkReportedExist(ctx, t, o)
				if t.Failed() {
					t.Logf("wait log:\n%s", log)
				}
				return "clear error: " + firstLine(msg)
			},
		},
		{
			name: "EtcdPausedDuringReport",
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				// etcd stalls before main exits and stays stalled until wait is reporting on
				// every backend, and etcdStall longer: the report meets the stall.
				tb.pause(t, "etcd")
				releaseAll(ctx, t, steps)
				for _, s := range steps {
					if err := s.untilLogged(ctx, "main exited; collecting outputs"); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(etcdStall) // the fault's length, not a synchronisation
				tb.resume(t, "etcd")
			},
			check: intact,
		},
		{
			name: "KubeletRestarted",
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				tb.kill(t, "kubelet")
				releaseAll(ctx, t, steps)
				tb.up(t, "kubelet")
			},
			check: intact,
		},
		{
			// containerd restarts while main runs; main exits after. (main exiting while
			// containerd is down loses what it printed then: see hack/TESTBED.md.)
			name: "ContainerdRestarted",
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				tb.stop(t, "containerd")
				tb.up(t, "containerd")
				releaseAll(ctx, t, steps)
			},
			check: intact,
		},
		{
			// main prints its result and exits while containerd is down: containerd's CRI
			// plugin, which copies a container's output to its log, never copies what was
			// printed then. wait must not report that result as complete: either the log
			// kept it, or the outputs say the result may be incomplete (issue 25, item 2).
			name: "ContainerdDownAtExit",
			skip: map[string]string{wf.ExecutorDocker: "dockerd copies main's output from the shim's pipes itself, not through containerd's CRI log: ContainerdRestarted covers docker"},
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				tb.stop(t, "containerd")
				releaseAll(ctx, t, steps)
				time.Sleep(containerdDownAfterExit) // the fault's length
				tb.up(t, "containerd")
			},
			check: func(ctx context.Context, t *testing.T, s *step) string {
				if s.e.Backend == emissary.ExecutorEmissary {
					// main's stdout is a file on the pod's volume: nothing is lost
					return intact(ctx, t, s)
				}
				p, err := s.finish(ctx)
				if err != nil {
					t.Fatalf("%v\nwait log:\n%s", err, s.waitLog())
				}
				o := s.checkIntactBut(ctx, t, p, false)
				switch {
				case o.Result != nil && *o.Result == s.result:
					if o.ResultIncomplete != "" {
						t.Logf("the result is whole but marked incomplete: %s", o.ResultIncomplete)
					}
					return "outputs intact (the log kept main's output)"
				case o.ResultIncomplete == "":
					t.Errorf("result %q reported as complete; main printed %q\nwait log:\n%s", deref(o.Result), s.result, s.waitLog())
				case !strings.Contains(o.ResultIncomplete, "container runtime was probably down"):
					t.Errorf("resultIncomplete %q does not say why", o.ResultIncomplete)
				case !strings.Contains(s.waitLog(), "the result may be incomplete"):
					t.Errorf("wait's log does not warn that the result may be incomplete:\n%s", s.waitLog())
				}
				return fmt.Sprintf("result %q marked incomplete: %s", deref(o.Result), firstLine(o.ResultIncomplete))
			},
		},
		{
			name: "PodDeleted",
			skip: map[string]string{wf.ExecutorDocker: "no kubelet runs the docker step's pod here: deleting the pod object stops no container"},
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				grace := int64(10)
				for _, s := range steps {
					if err := s.e.F.Client.CoreV1().Pods(s.e.F.Namespace).Delete(ctx, s.name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
						t.Fatal(err)
					}
				}
			},
			check: func(ctx context.Context, t *testing.T, s *step) string {
				if err := s.untilLogged(ctx, "wait finished"); err != nil {
					t.Fatalf("%v; wait log:\n%s", err, s.waitLog())
				}
				log := s.waitLog()
				want := "interrupted"
				// On emissary, main's wrapper may get the kubelet's SIGTERM, and main exit,
				// before wait gets its own: wait then sees main's exit first, and its log
				// must say a signal ended main (the wrapper's 137, as Argo's).
				if m := signalledMain.FindString(log); s.e.Backend == emissary.ExecutorEmissary && !strings.Contains(log, want) && m != "" {
					want = m
				}
				if !strings.Contains(log, want) {
					t.Errorf("wait's log says neither that it was interrupted nor that a signal ended main:\n%s", log)
				}
				return "clear error: " + firstLine(grepLine(log, want))
			},
		},
		{
			name: "APIServerDown10s",
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				start := time.Now()
				tb.kill(t, "apiserver")
				releaseAll(ctx, t, steps)
				time.Sleep(time.Until(start.Add(outage))) // the fault's length
				tb.up(t, "apiserver")
			},
			check: intact,
		},
		{
			// it deletes the overlay's service account, and makes it again when it ends
			name:   "ServiceAccountTokenRotated",
			skip:   map[string]string{wf.ExecutorDocker: "no kubelet projects a token for the docker step: its wait uses a kubeconfig the test writes"},
			setup:  grantRotated,
			mutate: mountTokenDir,
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				for _, s := range steps {
					s.tokens.rotate(ctx, t)
				}
				releaseAll(ctx, t, steps)
			},
			check: intact,
		},
		{
			// expires k8sapi's watch: etcd's revision moves on and is compacted while the API
			// server is down, so the resumed watch gets 410 and the pod is read again
			name: "EtcdCompactedAPIServerRestarted",
			skip: map[string]string{
				wf.ExecutorKubelet:        "the kubelet backend polls the kubelet's /pods: it holds no API watch to expire",
				emissary.ExecutorEmissary: "the emissary backend reads main's exit code file: it holds no API watch to expire",
				wf.ExecutorDocker:         "the docker backend waits with dockerd's ContainerWait: it holds no API watch to expire",
			},
			inject: func(ctx context.Context, t *testing.T, tb testbed, steps []*step) {
				tb.kill(t, "apiserver")
				rev := etcdCompact(ctx, t)
				t.Logf("etcd compacted to revision %d: a watch from an older resourceVersion gets 410 Gone", rev)
				tb.up(t, "apiserver")
				releaseAll(ctx, t, steps)
			},
			check: func(ctx context.Context, t *testing.T, s *step) string {
				out := intact(ctx, t, s)
				if !strings.Contains(s.waitLog(), "pod watch expired (410)") {
					t.Errorf("wait's log does not say the watch expired (410): the fault was not injected\n%s", s.waitLog())
				}
				return out + ", after a 410"
			},
		},
	}
}

// waitMessage is the wait container's termination message (for docker, which has none, the
// error argoexec printed last).
func waitMessage(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == wf.WaitContainerName && cs.State.Terminated != nil {
			m := cs.State.Terminated.Message
			if i := strings.LastIndex(m, "argoexec: "); i >= 0 && p.Spec.NodeName == framework.DockerNodeName {
				m = m[i+len("argoexec: "):]
			}
			return m
		}
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

func grepLine(log, text string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, text) {
			return l
		}
	}
	return ""
}

type row struct {
	fault, backend, outcome string
	took                    time.Duration
}

// TestFaults runs every fault against every backend it applies to and logs the table.
// signalledMain is emissary's wait logging that a signal ended main (the wrapper's 137).
var signalledMain = regexp.MustCompile(`msg="container exited".* container=main .*exitCode=137 .*signal=`)

func TestFaults(t *testing.T) {
	tb := newTestbed()
	envs := map[string]*framework.StepEnv{}
	for _, b := range backends {
		envs[b] = framework.NewStepEnv(t, b)
	}
	var mu sync.Mutex
	var rows []row
	add := func(r row) { mu.Lock(); rows = append(rows, r); mu.Unlock() }
	defer func() {
		var b strings.Builder
		b.WriteString("\n| fault | backend | outcome | time |\n|---|---|---|---|\n")
		for _, r := range rows {
			took := "-"
			if r.took > 0 {
				took = r.took.Round(100 * time.Millisecond).String()
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.fault, r.backend, r.outcome, took)
		}
		t.Log(b.String())
	}()
	for i, fc := range faults() {
		t.Run(fc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
			defer cancel()
			start := time.Now()
			var steps []*step
			for _, b := range backends {
				if why, ok := fc.skip[b]; ok {
					add(row{fc.name, b, "skipped: " + why, 0})
					continue
				}
				if fc.setup != nil {
					fc.setup(ctx, t, envs[b])
				}
				steps = append(steps, newStep(ctx, t, envs[b], fmt.Sprintf("f%d-%s", i, b), fc.mutate))
			}
			for _, s := range steps {
				if err := s.untilWaiting(ctx); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s: every wait waits for main after %s", fc.name, time.Since(start).Round(100*time.Millisecond))
			fc.inject(ctx, t, tb, steps)
			t.Logf("%s: fault injected and undone after %s", fc.name, time.Since(start).Round(100*time.Millisecond))
			for _, s := range steps {
				t.Run(s.e.Backend, func(t *testing.T) {
					var outcome string
					defer func() {
						if t.Failed() {
							outcome = strings.TrimSpace("FAILED " + outcome)
						}
						add(row{fc.name, s.e.Backend, outcome, time.Since(start)})
					}()
					outcome = fc.check(ctx, t, s)
				})
			}
			t.Logf("%s: %s", fc.name, time.Since(start).Round(100*time.Millisecond))
		})
	}
}
