//go:build e2e && bench

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// TestArgoFigures, under Argo v3.3.8's controller (build tag bench: `make bench-argo`): the
// anchor's step (anchor-figures.md) run one at a time, interleaved between the two executor
// images and the three backends (k8sapi, kubelet, emissary), ARGOEXEC_E2E_ARGO_BENCH times each (default 1; `make bench-argo`
// runs 7). It measures main's exit (containerd's task exit event) -> WorkflowTaskResult seen by
// a watch, pod created -> Succeeded (watch), wait's peak RSS and CPU (its cgroup and /proc,
// sampled while it runs), and the requests the pod's service account made (the API server's
// audit log, hack/cluster.sh) and the kubelet served during the step (its metrics). The table is
// logged, and written to ARGOEXEC_E2E_ARGO_BENCH_OUT when set. TestBench (bench_test.go) runs the
// same harness (measureStepWith) for make bench.

// ---------------------------------------------------------------- figures

// argoFiguresWorkflow is anchor-figures.md's step: an output parameter from /tmp/out on an
// emptyDir (k8sapi and kubelet cannot read the image's base layer).
const argoFiguresWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: %s
spec:
  entrypoint: step
  templates:
  - name: step
    script:
      image: alpine:3.7
      command: [sh]
      source: |
        echo hello; echo 42 > /tmp/out
      volumeMounts: [{name: tmp, mountPath: /tmp}]
    volumes: [{name: tmp, emptyDir: {}}]
    outputs:
      parameters:
      - name: out
        valueFrom: {path: /tmp/out}
`

var taskResultGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflowtaskresults"}

// stepFigures is one run of the anchor's step.
type stepFigures struct {
	image, backend string
	exitToResult   time.Duration // main's exit (containerd) -> WorkflowTaskResult ADDED (watch)
	createdToDone  time.Duration // pod ADDED -> pod Succeeded (watch)
	waitHWM        int64         // VmHWM of wait's argoexec, last sample before it exited
	waitCgroupMax  int64         // wait container's memory.max_usage_in_bytes (includes page cache)
	waitCPU        time.Duration // wait container's cpuacct.usage, last sample
	waitSamples    int
	initHWM        int64          // the same for init's argoexec (0: its cgroup was not seen)
	initCPU        time.Duration  // init container's cpuacct.usage, last sample
	loggedPeak     string         // ours: the "peak memory" line's peakRSS
	requests       int            // API requests by the pod's service account (audit log)
	requestKinds   map[string]int // "verb resource[/sub]" -> count
	kubelet        map[string]int // kubelet_http_requests_total deltas by "METHOD path" during the step
}

// taskExits follows containerd's /tasks/exit events (ctr events): container ID -> exited_at;
// and its /tasks/start events: container ID -> the event's time (the line's timestamp).
type taskExits struct {
	mu     sync.Mutex
	exits  map[string]time.Time
	starts map[string]time.Time
	cmd    *exec.Cmd
}

var (
	ctrExitRE  = regexp.MustCompile(`/tasks/exit\s+(\{.*\})`)
	ctrStartRE = regexp.MustCompile(`^(\S+ \S+ \S+ \S+) \S+ /tasks/start\s+\{"container_id":"([0-9a-f]+)"`)
)

func startTaskExits(t *testing.T) *taskExits {
	te := &taskExits{exits: map[string]time.Time{}, starts: map[string]time.Time{}}
	sock := argoGetenv("ARGOEXEC_E2E_CONTAINERD_SOCK", "/run/containerd/containerd.sock")
	te.cmd = exec.Command("ctr", "--address", sock, "events")
	out, err := te.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := te.cmd.Start(); err != nil {
		t.Fatalf("ctr events (containerd's task exit events): %v", err)
	}
	t.Cleanup(func() { _ = te.cmd.Process.Kill(); _ = te.cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if m := ctrStartRE.FindStringSubmatch(sc.Text()); m != nil {
				if at, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", m[1]); err == nil {
					te.mu.Lock()
					te.starts[m[2]] = at
					te.mu.Unlock()
				}
				continue
			}
			m := ctrExitRE.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			var ev struct {
				ContainerID string    `json:"container_id"`
				ID          string    `json:"id"`
				ExitedAt    time.Time `json:"exited_at"`
			}
			if json.Unmarshal([]byte(m[1]), &ev) != nil || ev.ContainerID == "" || ev.ID != ev.ContainerID {
				continue // an exec's exit has id != container_id
			}
			te.mu.Lock()
			te.exits[ev.ContainerID] = ev.ExitedAt
			te.mu.Unlock()
		}
	}()
	return te
}

// startOf is when containerd reported the container's task started, if it did.
func (te *taskExits) startOf(id string) (time.Time, bool) {
	te.mu.Lock()
	defer te.mu.Unlock()
	at, ok := te.starts[id]
	return at, ok
}

func (te *taskExits) exitOf(ctx context.Context, id string) (time.Time, error) {
	for {
		te.mu.Lock()
		at, ok := te.exits[id]
		te.mu.Unlock()
		if ok {
			return at, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no containerd /tasks/exit event for container %s", id)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func argoGetenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// waitSampler polls the cgroups of a pod's containers (cgroup v1, cgroupfs driver) until it finds
// the one running `argoexec wait` (sampleArgoexec: `argoexec <sub>`), then samples it every 10 ms
// until the cgroup is removed (the container exited): the cgroup's memory.max_usage_in_bytes,
// cpuacct.usage, and argoexec's VmHWM.
type waitSampler struct {
	hwm, cgMax, cpu int64
	samples         int
	found           bool
}

func sampleWait(ctx context.Context, podUID string) *waitSampler {
	return sampleArgoexec(ctx, podUID, "wait")
}

func sampleArgoexec(ctx context.Context, podUID, sub string) *waitSampler {
	s := &waitSampler{}
	var dir string // relative to the memory hierarchy
	var pid string
	for ctx.Err() == nil {
		if dir == "" {
			dirs, _ := filepath.Glob("/sys/fs/cgroup/memory/kubepods/*/pod" + podUID + "/*/cgroup.procs")
			more, _ := filepath.Glob("/sys/fs/cgroup/memory/kubepods/pod" + podUID + "/*/cgroup.procs")
			for _, f := range append(dirs, more...) {
				procs, _ := os.ReadFile(f)
				for _, p := range strings.Fields(string(procs)) {
					cmd, _ := os.ReadFile("/proc/" + p + "/cmdline")
					args := strings.Split(string(cmd), "\x00")
					if len(args) > 1 && filepath.Base(args[0]) == "argoexec" && args[1] == sub {
						dir, pid = strings.TrimPrefix(filepath.Dir(f), "/sys/fs/cgroup/memory/"), p
						s.found = true
					}
				}
			}
		}
		if dir != "" {
			max, err := argoReadInt("/sys/fs/cgroup/memory/" + dir + "/memory.max_usage_in_bytes")
			if err != nil {
				return s // the container exited
			}
			s.cgMax = max
			if cpu, err := argoReadInt("/sys/fs/cgroup/cpuacct/" + dir + "/cpuacct.usage"); err == nil {
				s.cpu = cpu
			}
			if st, err := os.ReadFile("/proc/" + pid + "/status"); err == nil {
				for _, l := range strings.Split(string(st), "\n") {
					if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
						if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb*1024 > s.hwm {
							s.hwm = kb * 1024
						}
					}
				}
			}
			s.samples++
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

func argoReadInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// kubeletRequests reads the kubelet's kubelet_http_requests_total, by "METHOD path".
func kubeletRequests(c *http.Client, env framework.Env) (map[string]int, error) {
	resp, err := c.Get(env.KubeletURL() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("kubelet /metrics: %s", resp.Status)
	}
	out := map[string]int{}
	re := regexp.MustCompile(`^kubelet_http_requests_total\{(.*)\} ([0-9.e+]+)$`)
	lab := regexp.MustCompile(`(\w+)="([^"]*)"`)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range lab.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		out[labels["method"]+" "+labels["path"]] += int(v)
	}
	return out, sc.Err()
}

func kubeletMetricsClient(env framework.Env) (*http.Client, error) {
	cfg, err := framework.RestConfig(env)
	if err != nil {
		return nil, err
	}
	pool, err := env.ClusterCAPool()
	if err != nil {
		return nil, err
	}
	c, err := rest.TLSConfigFor(cfg)
	if err != nil || c == nil || c.GetClientCertificate == nil {
		return nil, fmt.Errorf("admin kubeconfig has no client certificate: %v", err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, GetClientCertificate: c.GetClientCertificate}}}, nil
}

// auditEvents reads the audit log from offset on: the requests whose bound service-account
// token names the pod (user.extra authentication.kubernetes.io/pod-name), one per audit ID.
func auditEvents(path string, offset int64, namespace, pod string) (n int, kinds map[string]int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, nil, err
	}
	kinds = map[string]int{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	user := "system:serviceaccount:" + namespace + ":"
	for sc.Scan() {
		var ev struct {
			AuditID string `json:"auditID"`
			Verb    string `json:"verb"`
			User    struct {
				Username string              `json:"username"`
				Extra    map[string][]string `json:"extra"`
			} `json:"user"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || !strings.HasPrefix(ev.User.Username, user) {
			continue
		}
		if p := ev.User.Extra["authentication.kubernetes.io/pod-name"]; len(p) != 1 || p[0] != pod || seen[ev.AuditID] {
			continue
		}
		seen[ev.AuditID] = true
		k := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			k += "/" + ev.ObjectRef.Subresource
		}
		kinds[k]++
		n++
	}
	return n, kinds, sc.Err()
}

func argoFileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

var peakRE = regexp.MustCompile(`msg="peak memory".*peakRSS=(\S+)`)

// measureStep runs the anchor's step once and measures it.
func measureStep(ctx context.Context, t *testing.T, a *framework.Argo, te *taskExits, kc *http.Client, backend, name string) (*stepFigures, error) {
	return measureStepWith(ctx, t, a, te, kc, backend, name, argoFiguresWorkflow, wantOut42)
}

// wantOut42 checks the anchor's step: Succeeded with the output parameter out = 42.
func wantOut42(ctx context.Context, a *framework.Argo, final *unstructured.Unstructured) error {
	o, err := a.Collect(ctx, final)
	if err != nil {
		return err
	}
	if o.Phase != "Succeeded" {
		return fmt.Errorf("workflow %s: %s (%q)\n%s", final.GetName(), o.Phase, o.Message, a.Describe(ctx, o))
	}
	if n := o.Node("WF"); n == nil || n.Parameters["out"] != "42" {
		return fmt.Errorf("workflow %s: output parameter out not 42: %+v", final.GetName(), n)
	}
	return nil
}

// measureStepWith runs a one-step workflow (workflowYAML, with a %s for its name) once,
// measures it as measureStep does, and checks the finished workflow with check.
func measureStepWith(ctx context.Context, t *testing.T, a *framework.Argo, te *taskExits, kc *http.Client, backend, name, workflowYAML string,
	check func(context.Context, *framework.Argo, *unstructured.Unstructured) error) (*stepFigures, error) {
	f := &stepFigures{image: a.Controller.Name, backend: backend}
	ns := a.Controller.Namespace
	auditLog := filepath.Join(a.Env.State, "logs", "audit.log")
	auditFrom := argoFileSize(auditLog)
	kubeletBefore, kerr := kubeletRequests(kc, a.Env)

	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	pw, err := a.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	defer pw.Stop()
	tw, err := a.Dynamic.Resource(taskResultGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	defer tw.Stop()
	resultSeen := make(chan time.Time, 1)
	go func() {
		for ev := range tw.ResultChan() {
			if ev.Type == watch.Added {
				resultSeen <- time.Now()
				return
			}
		}
	}()

	wf, err := framework.ParseWorkflow(fmt.Appendf(nil, workflowYAML, name))
	if err != nil {
		return nil, err
	}
	if _, err := a.Submit(ctx, wf, backend); err != nil {
		return nil, err
	}
	var created, done time.Time
	var pod *corev1.Pod
	var sampler, initSampler chan *waitSampler
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	for done.IsZero() {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pod %s/%s: not Succeeded: %w", ns, name, ctx.Err())
		case ev, ok := <-pw.ResultChan():
			if !ok {
				return nil, fmt.Errorf("pod watch of %s/%s closed", ns, name)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			now := time.Now()
			if created.IsZero() {
				created = now
				sampler, initSampler = make(chan *waitSampler, 1), make(chan *waitSampler, 1)
				uid := string(p.UID)
				go func() { sampler <- sampleWait(sctx, uid) }()
				go func() { initSampler <- sampleArgoexec(sctx, uid, "init") }()
			}
			pod = p
			switch p.Status.Phase {
			case corev1.PodSucceeded:
				done = now
			case corev1.PodFailed:
				return nil, fmt.Errorf("pod %s/%s failed: %s", ns, name, framework.DescribeStatuses(p))
			}
		}
	}
	f.createdToDone = done.Sub(created)
	kubeletAfter, kerr2 := kubeletRequests(kc, a.Env)
	if kerr == nil && kerr2 == nil {
		f.kubelet = map[string]int{}
		for k, v := range kubeletAfter {
			if d := v - kubeletBefore[k]; d > 0 && !strings.HasSuffix(k, " metrics") {
				f.kubelet[k] = d
			}
		}
	}
	var mainID string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == "main" {
			mainID = strings.TrimPrefix(cs.ContainerID, "containerd://")
		}
	}
	ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
	exitAt, err := te.exitOf(ectx, mainID)
	ecancel()
	if err != nil {
		return nil, err
	}
	select {
	case seen := <-resultSeen:
		f.exitToResult = seen.Sub(exitAt)
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("no WorkflowTaskResult %s/%s seen", ns, name)
	}
	// the wait container's cgroup is gone once the pod Succeeded; give the sampler a moment
	select {
	case s := <-sampler:
		f.waitHWM, f.waitCgroupMax, f.waitCPU, f.waitSamples = s.hwm, s.cgMax, time.Duration(s.cpu), s.samples
		if !s.found {
			t.Logf("%s: wait's cgroup not found while it ran", name)
		}
	case <-time.After(5 * time.Second):
		scancel()
		t.Logf("%s: wait's cgroup still there 5 s after the pod Succeeded", name)
	}

	select {
	case s := <-initSampler: // init exited before main started: its cgroup is long gone
		if s.found {
			f.initHWM, f.initCPU = s.hwm, time.Duration(s.cpu)
		}
	case <-time.After(time.Second):
	}

	final, err := a.WaitForWorkflow(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := check(ctx, a, final); err != nil {
		return nil, err
	}
	if l, err := a.PodLog(ctx, name, "wait"); err == nil {
		if m := peakRE.FindStringSubmatch(l); m != nil {
			f.loggedPeak = m[1]
		}
	}
	// the watch's audit event (ResponseComplete) is written when the watch ends, with wait
	time.Sleep(time.Second)
	f.requests, f.requestKinds, err = auditEvents(auditLog, auditFrom, ns, name)
	if err != nil {
		t.Logf("audit log %s: %v (hack/cluster.sh starts the API server with it)", auditLog, err)
		f.requests = -1
	}
	if err := a.DeleteWorkflow(ctx, name); err != nil {
		t.Logf("deleting %s: %v", name, err)
	}
	return f, nil
}

func TestArgoFigures(t *testing.T) {
	reps := argoEnvInt("ARGOEXEC_E2E_ARGO_BENCH", 1)
	runLabel := runLabelFor("fig")
	var argos []*framework.Argo
	for _, name := range []string{"upstream", "ours"} {
		argos = append(argos, argoFor(t, name, runLabel))
	}
	te := startTaskExits(t)
	kc, err := kubeletMetricsClient(argos[0].Env)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string][]*stepFigures{}
	var order []string
	t0 := time.Now()
	// Interleaved: every repetition runs each image on each backend, one step at a time.
	for i := range reps {
		for _, backend := range []string{"k8sapi", "kubelet", "emissary"} {
			for _, a := range argos {
				key := a.Controller.Name + "/" + backend
				if i == 0 {
					order = append(order, key)
				}
				name := fmt.Sprintf("%s-%s-%s-%d", runLabel, a.Controller.Name, backend, i)
				t.Run(fmt.Sprintf("%s/%d", key, i), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					f, err := measureStep(ctx, t, a, te, kc, backend, name)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%s: main exit -> task result %s, pod created -> Succeeded %s, wait VmHWM %.1f MiB (logged %s), cgroup max %.1f MiB, CPU %s (%d samples), requests %d %v, kubelet %v",
						name, f.exitToResult.Round(time.Millisecond), f.createdToDone.Round(time.Millisecond), argoMiB(f.waitHWM), f.loggedPeak,
						argoMiB(f.waitCgroupMax), f.waitCPU.Round(time.Millisecond), f.waitSamples, f.requests, f.requestKinds, f.kubelet)
					all[key] = append(all[key], f)
				})
			}
		}
	}
	table := figuresTable(order, all, reps)
	t.Logf("%d runs in %s:\n%s", len(order)*reps, time.Since(t0).Round(time.Second), table)
	if out := os.Getenv("ARGOEXEC_E2E_ARGO_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func argoMiB(b int64) float64 { return float64(b) / (1 << 20) }

func figuresTable(order []string, all map[string][]*stepFigures, reps int) string {
	var b strings.Builder
	b.WriteString("| executor image | backend | runs | main exits → task result seen, median (p90) | pod created → Succeeded, median (p90) | wait peak RSS (VmHWM), median (max) | wait cgroup max usage, median | wait CPU, median (p90) | API requests per step by the pod's service account | kubelet requests during the step, fewest in a run |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	for _, key := range order {
		fs := all[key]
		image, backend, _ := strings.Cut(key, "/")
		if image == "upstream" {
			image = "Argo's argoexec v3.3.8"
		} else {
			image = "ours (argoexec:dev)"
		}
		var e2r, c2d, cpu, hwm, cg []time.Duration
		reqs := map[string][]int{}
		kub := map[string][]int{}
		var total []int
		for _, f := range fs {
			e2r = append(e2r, f.exitToResult)
			c2d = append(c2d, f.createdToDone)
			cpu = append(cpu, f.waitCPU)
			hwm = append(hwm, time.Duration(f.waitHWM))
			cg = append(cg, time.Duration(f.waitCgroupMax))
			total = append(total, f.requests)
			for k, v := range f.requestKinds {
				reqs[k] = append(reqs[k], v)
			}
			for k, v := range f.kubelet {
				kub[k] = append(kub[k], v)
			}
		}
		// the kubelet's counters are every client's: show the fewest seen in a run (a key
		// missing from any run is 0), which other clients cannot have added to
		fewestInEveryRun(kub, len(fs))
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %s (%s) | %s (%s) | %.1f MiB (%.1f) | %.1f MiB | %d ms (%d) | %s | %s |\n",
			image, backend, len(fs), reps,
			ms(argoMedian(e2r)), ms(argoQuantile(e2r, 0.9)), ms(argoMedian(c2d)), ms(argoQuantile(c2d, 0.9)),
			argoMiB(int64(argoMedian(hwm))), argoMiB(int64(argoMax(hwm))), argoMiB(int64(argoMedian(cg))),
			argoMedian(cpu).Milliseconds(), argoQuantile(cpu, 0.9).Milliseconds(),
			countsSummary(argoMedianInt(total), reqs), countsSummary(-1, kub))
	}
	return b.String()
}

func argoMedianInt(v []int) int {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x)
	}
	return int(argoMedian(d))
}

// countsSummary: "N (verb resource ×median, ...)"; total < 0 leaves the total out.
func countsSummary(total int, m map[string][]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		d := make([]time.Duration, len(m[k]))
		for i, x := range m[k] {
			d[i] = time.Duration(x)
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", k, int(argoMedian(d))))
	}
	s := strings.Join(parts, ", ")
	if total >= 0 {
		return fmt.Sprintf("%d (%s)", total, s)
	}
	if s == "" {
		return "—"
	}
	return s
}

// fewestInEveryRun keeps, for each kubelet counter, the fewest requests seen in one of runs
// runs, and drops a counter that some run did not see (it was 0 there): the kubelet's
// counters are every client's, and the fewest is what other clients cannot have added to.
func fewestInEveryRun(kub map[string][]int, runs int) {
	for k, v := range kub {
		if len(v) < runs {
			delete(kub, k)
			continue
		}
		kub[k] = []int{slices.Min(v)}
	}
}
