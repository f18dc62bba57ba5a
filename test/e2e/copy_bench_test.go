//go:build e2e && bench

package e2e

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/k8sapi"
	"github.com/argoexec/argoexec/executor/kubelet"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// Figures of the backends' CopyFile and of the kubelet's /pods poll, each against its peer in the
// same run (kubectl cp, docker cp, the raw transport): measurement only, under the build tag
// bench (ARGOEXEC_E2E_TAGS=e2e,bench hack/e2e.sh -run NAME). The mechanisms under the figures
// are gated elsewhere: one SPDY session per exec CopyFile by copyVsKubectl, which TestBench runs
// in make test (hack/bench.sh --smoke); docker CopyFile's flat memory by TestDockerCopyFlatRSS,
// wait's by TestWaitPeakRSS, in the e2e tier.

// TestK8sAPICopyThroughput measures, in one run, CopyFile of 256 MiB of random data
// (compression off) through the k8sapi backend against `kubectl cp` of the same file (the
// ratio), the API server's and kubelet's CPU during each, the cost of gzip apart, and the
// peak RSS of a fresh process doing one CopyFile of 64 MiB and of 256 MiB.
//
//	ARGOEXEC_E2E_TAGS=e2e,bench hack/e2e.sh -run K8sAPICopyThroughput
func TestK8sAPICopyThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 256 MiB several times; not with -short")
	}
	const size = 256 << 20
	f := framework.New(t)
	pod := k8sapiBigFilePod(t, f, "copy", size)
	x, err := k8sapi.New(k8sapi.Config{Kubeconfig: f.Env.Kubeconfig, Namespace: f.Namespace, PodName: pod.Name}, logrus.NewEntry(logrus.New()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var raw []time.Duration
	r := copyVsKubectl(t, f, x, pod.Name, size, 3, func(i int) {
		start := time.Now()
		if n, err := rawExecCat(ctx, f, pod.Name, "/data/big.bin"); err != nil || n != size {
			t.Fatalf("run %d: raw exec cat: %d bytes, %v", i, n, err)
		}
		raw = append(raw, time.Since(start))
	})
	r.log(t, "k8sapi", size, ">= 1.8x")
	mibps := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	mr := median(raw)
	t.Logf("ceiling in the same run: exec `cat` over SPDY through the API server to io.Discard, median %s (%.0f MiB/s; all %v): CopyFile reaches %.0f%% of it",
		mr.Round(time.Millisecond), mibps(mr), raw, 100*mr.Seconds()/median(r.ours).Seconds())

	// gzip, apart: the same copy at BestSpeed and at the default level, once each.
	for _, lv := range []struct {
		name  string
		level int
	}{{"BestSpeed", gzip.BestSpeed}, {"Default", gzip.DefaultCompression}} {
		self := selfCPU()
		start := time.Now()
		if err := x.CopyFile(ctx, "main", "/data/big.bin", filepath.Join(dir, "gz.tgz"), lv.level); err != nil {
			t.Fatalf("CopyFile at %s: %v", lv.name, err)
		}
		d := time.Since(start)
		cpu := selfCPU() - self
		t.Logf("256 MiB random at gzip %s: %s wall (%.0f MiB/s), %s CPU in this process", lv.name, d.Round(time.Millisecond), mibps(d), cpu.Round(time.Millisecond))
	}

	small := k8sapiBigFilePod(t, f, "copy-small", 64<<20)
	rssIdle := k8sapiHelperPeakRSS(t, f, "")
	rss64 := k8sapiHelperPeakRSS(t, f, small.Name)
	rss256 := k8sapiHelperPeakRSS(t, f, pod.Name)
	t.Logf("peak RSS of a fresh test process doing one k8sapi CopyFile (compression off): 64 MiB file %.1f MiB, 256 MiB file %.1f MiB; "+
		"the same binary idle %.1f MiB, so the copy adds %.1f MiB (goal <= 32 MiB, flat)",
		float64(rss64)/(1<<20), float64(rss256)/(1<<20), float64(rssIdle)/(1<<20), float64(rss256-rssIdle)/(1<<20))
	// Measured, not gated: the SPDY path's peak is known not to be flat (every data frame is
	// a fresh allocation, and RSS follows the GC's spikes: 73 -> 98 MiB here once, in CI;
	// BENCHMARKS.md, "The exec CopyFile path"). A gate on it failed CI at random.
	if rss256 > rss64+8<<20 {
		t.Logf("NOT FLAT: peak RSS grew from %.1f MiB (64 MiB file) to %.1f MiB (256 MiB file)", float64(rss64)/(1<<20), float64(rss256)/(1<<20))
	}
}

// rawExecCat streams `cat path` from main over SPDY through the API server into io.Discard,
// with client-go alone: the transport's own speed, the ceiling for CopyFile.
func rawExecCat(ctx context.Context, f *framework.Framework, pod, path string) (int64, error) {
	u := f.Client.CoreV1().RESTClient().Post().Namespace(f.Namespace).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: []string{"cat", path}, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewSPDYExecutor(f.Config, "POST", u)
	if err != nil {
		return 0, err
	}
	var n countWriter
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &n, Stderr: io.Discard})
	return int64(n), err
}

// countWriter counts and discards.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

const k8sapiCopyHelperEnv = "ARGOEXEC_E2E_K8SAPI_COPY_HELPER" // "<kubeconfig> <ns> <pod> <dest>"

// k8sapiHelperPeakRSS re-runs this test binary as a helper that does one CopyFile of
// /data/big.bin and exits, and returns its peak RSS: VmHWM of its own address space, which
// the helper prints. (The rusage maxrss of a child started by a Go program is useless here:
// the child is cloned with the parent's address space before exec, and Linux carries that
// address space's high-water mark into the child's maxrss.) With pod empty the helper copies
// nothing: the binary's own baseline.
func k8sapiHelperPeakRSS(t *testing.T, f *framework.Framework, pod string) int64 {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "helper.tgz")
	cmd := exec.Command(os.Args[0], "-test.run=^TestK8sAPICopyHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), k8sapiCopyHelperEnv+"="+strings.Join([]string{f.Env.Kubeconfig, f.Namespace, pod, dest}, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("copy helper: %v\n%s", err, out)
	}
	if pod != "" {
		if st, err := os.Stat(dest); err != nil || st.Size() < 64<<20 {
			t.Fatalf("copy helper wrote %v, %v\n%s", st, err, out)
		}
	}
	_, after, ok := strings.Cut(string(out), "VmHWM:")
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.Fields(after + " x")[0], "kB")), 10, 64)
	if !ok || err != nil {
		t.Fatalf("copy helper printed no VmHWM: %s", out)
	}
	return kb << 10
}

// TestK8sAPICopyHelper is the process k8sapiHelperPeakRSS measures; it does nothing unless
// started by it.
func TestK8sAPICopyHelper(t *testing.T) {
	args := strings.Split(os.Getenv(k8sapiCopyHelperEnv), " ")
	if len(args) != 4 {
		t.Skip("helper process for TestK8sAPICopyThroughput")
	}
	if args[2] != "" {
		x, err := k8sapi.New(k8sapi.Config{Kubeconfig: args[0], Namespace: args[1], PodName: args[2]}, logrus.NewEntry(logrus.New()))
		if err != nil {
			t.Fatal(err)
		}
		if err := x.CopyFile(context.Background(), "main", "/data/big.bin", args[3], gzip.NoCompression); err != nil {
			t.Fatal(err)
		}
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			t.Log(line)
		}
	}
}

// TestKubeletCopyThroughput measures, in one run, CopyFile of 256 MiB of random data
// (compression off) through the kubelet backend against `kubectl cp` of the same file (the
// ratio; goal >= 2.0x), with the API server's and the kubelet's CPU during each.
//
//	ARGOEXEC_E2E_TAGS=e2e,bench hack/e2e.sh -run KubeletCopyThroughput
func TestKubeletCopyThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 256 MiB several times; not with -short")
	}
	const size = 256 << 20
	f := framework.New(t)
	token := kubeletToken(t, f, "argoexec-kubelet", kubeletRules(t))
	pod := scriptPod(f, "copy", []executortest.Container{{Name: "main",
		Script: fmt.Sprintf("head -c %d /dev/urandom > /data/big.bin && touch /data/ready && sleep 3600", size)}})
	kubeletStartPod(t, f, pod)
	x, err := kubelet.New(kubeletConfig(f, pod.Name, token), testLog(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		if _, err := x.GetFileContents(ctx, "main", "/data/ready"); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("main never wrote /data/ready")
		case <-time.After(delay):
		}
	}

	copyVsKubectl(t, f, x, pod.Name, size, 3, nil).log(t, "kubelet", size, ">= 2.0x")
}

// TestKubeletPodsPollCost measures what one /pods poll costs with 30 pods on the node: the
// bytes the kubelet sends, this process's CPU to decode them (the streaming decoder), and
// the kubelet's CPU to serve them; Wait polls at most once a second (PollMax), so the cost
// per second of a long Wait is one poll's.
//
//	ARGOEXEC_E2E_TAGS=e2e,bench hack/e2e.sh -run KubeletPodsPollCost
func TestKubeletPodsPollCost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts up to 30 pods; not with -short")
	}
	const want, polls = 30, 50
	f := framework.New(t)
	ctx := f.Context()
	token := kubeletToken(t, f, "argoexec-kubelet", kubeletRules(t))
	all, err := f.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + f.Env.NodeName})
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for i := len(all.Items); i < want; i++ {
		pod := scriptPod(f, fmt.Sprintf("filler-%d", i), []executortest.Container{{Name: "main", Script: "sleep 3600"}})
		f.CreatePod(ctx, pod)
		last = pod.Name
	}
	if last != "" {
		if _, err := f.WaitForPod(ctx, last, startedAll); err != nil {
			t.Fatal(err)
		}
	}
	pod := scriptPod(f, "poll", []executortest.Container{{Name: "main", Script: "sleep 3600"}})
	kubeletStartPod(t, f, pod)

	// The bytes of one /pods, fetched as the backend fetches it.
	hc, err := f.KubeletClient(false)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(token)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.Env.KubeletURL()+"/pods", nil)
	req.Header.Set("Authorization", "Bearer "+string(tok))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /pods: %s", resp.Status)
	}

	x, err := kubelet.New(kubeletConfig(f, pod.Name, token), testLog(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.ListContainerNames(ctx); err != nil { // warm the connection
		t.Fatal(err)
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	m := startCPU()
	start := time.Now()
	for range polls {
		if _, err := x.GetExitCode(ctx, "main"); err == nil || !strings.Contains(err.Error(), "not terminated") {
			t.Fatalf("GetExitCode on running main: %v", err)
		}
	}
	wall := time.Since(start)
	_, kcpu := m.since()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	t.Logf("one /pods poll with %d+ pods on the node: %d bytes; per poll over %d polls: %s wall, %s CPU in this process, %s kubelet CPU; "+
		"at Wait's 1 s PollMax that is %.1f%% of a core here and %.1f%% in the kubelet (Argo v3.3.8: 766 KB every 5 s with 55 pods)",
		want, n, polls, (wall / polls).Round(time.Microsecond), (cpu / polls).Round(time.Microsecond), (kcpu / polls).Round(time.Microsecond),
		100*(cpu/polls).Seconds(), 100*(kcpu/polls).Seconds())
}

// rawArchive reads GET /containers/{id}/archive straight into w (io.Discard: the engine's
// own speed, the ceiling for any client; a file: that plus the local disk).
func rawArchive(ctx context.Context, d *framework.Docker, id, src string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		"http://docker/"+framework.DockerAPIVersion+"/containers/"+id+"/archive?"+url.Values{"path": {src}}.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("archive: HTTP %d", resp.StatusCode)
	}
	return io.Copy(w, resp.Body)
}

// rawArchiveToFile is rawArchive into a new file at dest.
func rawArchiveToFile(ctx context.Context, d *framework.Docker, id, src, dest string) (int64, error) {
	f, err := os.Create(dest)
	if err != nil {
		return 0, err
	}
	n, err := rawArchive(ctx, d, id, src, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// BenchmarkDockerCopyFile256MiB copies 256 MiB of random data out of a stopped container,
// compression off: through the backend into a local .tgz, and as the raw archive stream.
//
//	go test -tags e2e,bench -run '^$' -bench DockerCopyFile -benchtime 3x ./test/e2e
func BenchmarkDockerCopyFile256MiB(b *testing.B) {
	const size = 256 << 20
	p, x := bigFilePod(b, size)
	ctx := context.Background()
	b.Run("backend", func(b *testing.B) {
		b.SetBytes(size)
		dest := filepath.Join(b.TempDir(), "big.tgz")
		for b.Loop() {
			if err := x.CopyFile(ctx, "main", "/tmp/big.bin", dest, gzip.NoCompression); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rawArchiveStream", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if _, err := rawArchive(ctx, p.d, p.ids["main"], "/tmp/big.bin", io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rawArchiveStreamToFile", func(b *testing.B) {
		b.SetBytes(size)
		dest := filepath.Join(b.TempDir(), "big.tar")
		for b.Loop() {
			if _, err := rawArchiveToFile(ctx, p.d, p.ids["main"], "/tmp/big.bin", dest); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDockerCopyThroughput measures, in one run, CopyFile of 256 MiB (compression off) against
// the raw archive stream (the ratio) and `docker cp` (the peer). Its peak RSS, flat in file
// size, is TestDockerCopyFlatRSS's (e2e tier).
func TestDockerCopyThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 256 MiB several times; not with -short")
	}
	const size = 256 << 20
	p, x := bigFilePod(t, size)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	dest := filepath.Join(dir, "big.tgz")
	const runs = 3
	dockerCLI := dockerCLIPath(t)
	var backend, raw, rawFile, cli []time.Duration
	for range runs { // interleaved, so load on the machine hits all four alike
		settle(filepath.Join(dir, "docker-cp.bin"))
		start := time.Now()
		cmd := exec.CommandContext(ctx, dockerCLI, "-H", "unix://"+p.d.Sock, "cp", p.ids["main"]+":/tmp/big.bin", filepath.Join(dir, "docker-cp.bin"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docker cp: %v\n%s", err, out)
		}
		cli = append(cli, time.Since(start))
		start = time.Now()
		if n, err := rawArchive(ctx, p.d, p.ids["main"], "/tmp/big.bin", io.Discard); err != nil || n < size {
			t.Fatalf("raw archive stream: %d bytes, %v", n, err)
		}
		raw = append(raw, time.Since(start))
		settle(filepath.Join(dir, "big.tar"))
		start = time.Now()
		if n, err := rawArchiveToFile(ctx, p.d, p.ids["main"], "/tmp/big.bin", filepath.Join(dir, "big.tar")); err != nil || n < size {
			t.Fatalf("raw archive stream to a file: %d bytes, %v", n, err)
		}
		rawFile = append(rawFile, time.Since(start))
		settle(dest)
		start = time.Now()
		if err := x.CopyFile(ctx, "main", "/tmp/big.bin", dest, gzip.NoCompression); err != nil {
			t.Fatalf("CopyFile: %v", err)
		}
		backend = append(backend, time.Since(start))
	}
	st, err := os.Stat(dest)
	if err != nil || st.Size() < size {
		t.Fatalf("CopyFile wrote %v, %v; want at least %d bytes", st, err, size)
	}
	median := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	mb, mr, mf := median(backend), median(raw), median(rawFile)
	mibps := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	t.Logf("256 MiB, compression off, median of %d interleaved runs: backend CopyFile to .tgz %s (%.0f MiB/s); raw archive stream to io.Discard %s (%.0f MiB/s), to a file %s (%.0f MiB/s); throughput ratio backend/raw %.2f, backend/raw-to-file %.2f",
		runs, mb.Round(time.Millisecond), mibps(mb), mr.Round(time.Millisecond), mibps(mr), mf.Round(time.Millisecond), mibps(mf), mr.Seconds()/mb.Seconds(), mf.Seconds()/mb.Seconds())
	if st, err := os.Stat(filepath.Join(dir, "docker-cp.bin")); err != nil || st.Size() != size {
		t.Fatalf("docker cp wrote %v, %v", st, err)
	}
	mc := median(cli)
	t.Logf("peer in the same run: `docker cp` (%s) %s (%.0f MiB/s): CopyFile is %.2fx as fast (goal >= 1.0)",
		dockerCLI, mc.Round(time.Millisecond), mibps(mc), mc.Seconds()/mb.Seconds())

}

// dockerCLIPath is the docker CLI of Debian's docker.io package, which hack/cluster.sh installs
// with dockerd (the benchmark's peer; the backend itself never runs a CLI).
func dockerCLIPath(t *testing.T) string {
	if _, err := os.Stat("/usr/bin/docker"); err == nil {
		return "/usr/bin/docker"
	}
	p, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker CLI (hack/cluster.sh installs docker.io, which has it): cannot measure the docker cp peer")
	}
	return p
}

// k8sapiBigFilePod starts a pod whose main writes size random bytes to /data/big.bin (an
// emptyDir, as in the anchor's measurements) and then idles.
func k8sapiBigFilePod(t testing.TB, f *framework.Framework, name string, size int64) *corev1.Pod {
	t.Helper()
	ctx := f.Context()
	pod := scriptPod(f, name, []executortest.Container{{Name: "main",
		Script: fmt.Sprintf("head -c %d /dev/urandom > /data/big.bin && touch /data/ready && sleep 3600", size)}})
	f.CreatePod(ctx, pod)
	if _, err := f.WaitForPod(ctx, pod.Name, startedAll); err != nil {
		t.Fatal(err)
	}
	x, err := k8sapi.New(k8sapi.Config{Kubeconfig: f.Env.Kubeconfig, Namespace: f.Namespace, PodName: pod.Name}, logrus.NewEntry(logrus.New()))
	if err != nil {
		t.Fatal(err)
	}
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		if _, err := x.GetFileContents(ctx, "main", "/data/ready"); err == nil {
			return pod
		}
		select {
		case <-ctx.Done():
			t.Fatalf("main never wrote /data/ready")
		case <-time.After(delay):
		}
	}
}
