//go:build e2e && bench

package e2e

import (
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// Helpers the throughput benchmarks of every backend share.

// kubectlPath finds kubectl: on PATH, or where hack/lib/build.sh puts it.
func kubectlPath(t testing.TB) string {
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	p := "/var/cache/argoexec/bin/kubectl"
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no kubectl on PATH or at %s (hack/cluster.sh up builds it)", p)
	}
	return p
}

// daemonCPU returns the CPU time (user+system) so far of the first process whose command
// name is comm, read from /proc; zero if there is none (the daemons run on this machine).
func daemonCPU(comm string) time.Duration {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		c, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			return 0
		}
		// Fields after the ")" that closes comm: state is 3rd, utime 14th, stime 15th.
		s := string(stat)
		fs := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		ut, _ := strconv.ParseInt(fs[11], 10, 64)
		st, _ := strconv.ParseInt(fs[12], 10, 64)
		return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
	}
	return 0
}

// cpuMeter measures the CPU the API server and the kubelet spend between start and stop.
type cpuMeter struct{ api, kubelet time.Duration }

func startCPU() cpuMeter { return cpuMeter{daemonCPU("kube-apiserver"), daemonCPU("kubelet")} }

func (m cpuMeter) since() (api, kubelet time.Duration) {
	return daemonCPU("kube-apiserver") - m.api, daemonCPU("kubelet") - m.kubelet
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// selfCPU is this process's CPU time so far (user+system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// settle removes the output of an earlier copy and flushes dirty pages to disk (sync(2)), so
// that the copy timed next starts from the same state as its peer: without it, whichever copy
// runs after a 256 MiB write pays for that write's unlink and writeback (in `make bench` the
// docker series ran right after two 256 MiB kubelet copies and lost to `docker cp`, 0.87x).
func settle(paths ...string) {
	for _, p := range paths {
		_ = os.Remove(p)
	}
	syscall.Sync()
}

// copyRuns is what copyVsKubectl measured: per run, the wall time of our CopyFile and of
// `kubectl cp`, and the CPU the API server and the kubelet spent in each.
type copyRuns struct {
	ours, theirs                                   []time.Duration
	oursAPI, oursKubelet, theirsAPI, theirsKubelet []time.Duration
	oursSelf                                       []time.Duration // this process's CPU during CopyFile
}

// execSessioner is the optional interface of an exec backend (k8sapi, kubelet) that says
// how many exec sessions SPDY and WebSocket have carried.
type execSessioner interface {
	ExecSessions() (spdy, websocket int)
}

// copyVsKubectl copies /data/big.bin (size bytes) out of main of pod runs times with
// x.CopyFile (compression off) and with `kubectl cp`, interleaved so load on the machine hits
// both alike; between in each run, if not nil, runs after CopyFile (another peer). It checks
// that both wrote the whole file, and, for an exec backend, that every CopyFile went over
// one SPDY session (the intended path: the figures are SPDY's, not a WebSocket fallback's).
func copyVsKubectl(t *testing.T, f *framework.Framework, x executor.ContainerRuntimeExecutor, pod string, size int64, runs int, between func(run int)) copyRuns {
	t.Helper()
	kubectl := kubectlPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var r copyRuns
	for i := range runs {
		es, isExec := x.(execSessioner)
		var spdy0, ws0 int
		if isExec {
			spdy0, ws0 = es.ExecSessions()
		}
		settle(filepath.Join(dir, "big.tgz"))
		m, self, start := startCPU(), selfCPU(), time.Now()
		if err := x.CopyFile(ctx, "main", "/data/big.bin", filepath.Join(dir, "big.tgz"), gzip.NoCompression); err != nil {
			t.Fatalf("run %d: CopyFile: %v", i, err)
		}
		if isExec {
			if spdy1, ws1 := es.ExecSessions(); spdy1-spdy0 != 1 || ws1 != ws0 {
				t.Errorf("run %d: CopyFile went over %d SPDY and %d WebSocket sessions; want one SPDY session", i, spdy1-spdy0, ws1-ws0)
			}
		}
		r.ours, r.oursSelf = append(r.ours, time.Since(start)), append(r.oursSelf, selfCPU()-self)
		a, k := m.since()
		r.oursAPI, r.oursKubelet = append(r.oursAPI, a), append(r.oursKubelet, k)
		if between != nil {
			between(i)
		}
		settle(filepath.Join(dir, "kubectl.bin"))
		m, start = startCPU(), time.Now()
		cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", f.Env.Kubeconfig, "cp", "-c", "main",
			f.Namespace+"/"+pod+":/data/big.bin", filepath.Join(dir, "kubectl.bin"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: kubectl cp: %v\n%s", i, err, out)
		}
		r.theirs = append(r.theirs, time.Since(start))
		a, k = m.since()
		r.theirsAPI, r.theirsKubelet = append(r.theirsAPI, a), append(r.theirsKubelet, k)
	}
	if st, err := os.Stat(filepath.Join(dir, "kubectl.bin")); err != nil || st.Size() != size {
		t.Fatalf("kubectl cp wrote %v, %v", st, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "big.tgz")); err != nil || st.Size() < size {
		t.Fatalf("CopyFile wrote %v, %v", st, err)
	}
	return r
}

// log logs the medians: wall times, the ratio against kubectl cp, and the daemons' CPU.
func (r copyRuns) log(t *testing.T, backend string, size int64, goal string) {
	t.Helper()
	mibps := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	mo, mt := median(r.ours), median(r.theirs)
	t.Logf("%d MiB random, compression off, median of %d: %s CopyFile %s (%.0f MiB/s; all %v), kubectl cp %s (%.0f MiB/s; all %v): ratio %.2fx (goal %s)",
		size>>20, len(r.ours), backend, mo.Round(time.Millisecond), mibps(mo), r.ours, mt.Round(time.Millisecond), mibps(mt), r.theirs, mt.Seconds()/mo.Seconds(), goal)
	t.Logf("CPU during the copy, median: %s CopyFile: kube-apiserver %s, kubelet %s, this process %s; kubectl cp: kube-apiserver %s, kubelet %s",
		backend, median(r.oursAPI), median(r.oursKubelet), median(r.oursSelf), median(r.theirsAPI), median(r.theirsKubelet))
}
