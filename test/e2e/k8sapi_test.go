//go:build e2e

// The k8sapi backend on the testbed's real API server and kubelet: the conformance suite
// against a real pod, with a service account that holds exactly the RBAC the backend
// documents; the 403 text when pods/exec is missing; and the figures of issue 4 (CopyFile of
// 256 MiB against `kubectl cp` in the same run, Wait latency from main's own clock).
package e2e

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/k8sapi"
	"github.com/argoexec/argoexec/test/e2e/framework"
)

// k8sapiRules is the Role the k8sapi backend documents (executor/k8sapi package doc).
var k8sapiRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}},
}

// k8sapiKubeconfig creates a service account bound to a Role with rules in the test's
// namespace and writes a kubeconfig that authenticates as it (a TokenRequest token): the
// backend then runs with the permissions a workflow pod would have, not the admin's.
func k8sapiKubeconfig(t testing.TB, f *framework.Framework, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	ctx := f.Context()
	c := f.Client
	ns := f.Namespace
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	if _, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role: %v", err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}
	if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role binding: %v", err)
	}
	exp := int64(3600)
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	cluster := &clientcmdapi.Cluster{Server: f.Config.Host, CertificateAuthority: f.Config.CAFile, CertificateAuthorityData: f.Config.CAData}
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"testbed": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: "testbed", AuthInfo: name, Namespace: ns}},
		CurrentContext: name,
	}
	p := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(kc, p); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	return p
}

// k8sapiStarted creates pod, waits until all its containers have started, and returns the
// backend for it, authenticated by kubeconfig, logging to the test log.
func k8sapiStarted(t *testing.T, f *framework.Framework, kubeconfig string, pod *corev1.Pod) *k8sapi.Executor {
	t.Helper()
	ctx := f.Context()
	f.CreatePod(ctx, pod)
	if _, err := f.WaitForPod(ctx, pod.Name, startedAll); err != nil {
		t.Fatal(err)
	}
	x, err := k8sapi.New(k8sapi.Config{Kubeconfig: kubeconfig, Namespace: f.Namespace, PodName: pod.Name}, testLog(t, nil))
	if err != nil {
		t.Fatalf("k8sapi.New: %v", err)
	}
	return x
}

// TestK8sAPIConformance runs the conformance suite against a real pod, as a service account
// with exactly the documented RBAC.
func TestK8sAPIConformance(t *testing.T) {
	executortest.RunConformance(t, executortest.Env{
		Backend: "k8sapi",
		Start: func(t *testing.T, cs []executortest.Container) executor.ContainerRuntimeExecutor {
			f := framework.New(t)
			kubeconfig := k8sapiKubeconfig(t, f, "argoexec-k8sapi", k8sapiRules)
			return k8sapiStarted(t, f, kubeconfig, scriptPod(f, "conformance", cs))
		},
	})
}

// TestK8sAPIForbiddenNamesPermission: without pods/exec, reading a file is a 403 whose text
// names the verb, the resource, the namespace and the service account.
func TestK8sAPIForbiddenNamesPermission(t *testing.T) {
	f := framework.New(t)
	ctx := f.Context()
	kubeconfig := k8sapiKubeconfig(t, f, "no-exec", k8sapiRules[:2])
	x := k8sapiStarted(t, f, kubeconfig, scriptPod(f, "forbidden", []executortest.Container{{Name: "main", Script: "sleep 3600"}}))
	_, err := x.GetFileContents(ctx, "main", "/etc/hostname")
	t.Logf("GetFileContents without pods/exec: %v", err)
	for _, w := range []string{`"create" on "pods/exec"`, "namespace " + f.Namespace, "system:serviceaccount:" + f.Namespace + ":no-exec", `"main"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not contain %q", err, w)
		}
	}
}

// TestK8sAPIWebSocketFallback runs the backend through an HTTP proxy in front of the real API
// server that refuses SPDY upgrades, as some L7 proxies and gateways do: every exec must then go
// over the WebSocket fallback. Reading a file, copying it and Wait all work, and the proxy saw
// one refused SPDY upgrade (the backend then goes to WebSocket directly) and the WebSocket ones. (RBAC cannot force the fallback on
// v1.37: the API server authorises a WebSocket exec as pods/exec get and then also checks
// create, so a service account without create has neither protocol.)
func TestK8sAPIWebSocketFallback(t *testing.T) {
	f := framework.New(t)
	ctx := f.Context()
	direct := k8sapiKubeconfig(t, f, "argoexec-k8sapi", k8sapiRules)
	proxy := &spdyRefusingProxy{t: t, target: f.Config}
	// TLS: clientcmd sends no credentials to an http:// server.
	srv := httptest.NewTLSServer(proxy)
	defer srv.Close()
	proxyCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc, err := clientcmd.LoadFromFile(direct)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		c.Server, c.CertificateAuthority, c.CertificateAuthorityData = srv.URL, "", proxyCA
	}
	kubeconfig := filepath.Join(t.TempDir(), "via-proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	x := k8sapiStarted(t, f, kubeconfig, scriptPod(f, "ws", []executortest.Container{{Name: "main", Script: "echo websocket > /tmp/ws; sleep 3"}}))
	got, err := x.GetFileContents(ctx, "main", "/tmp/ws")
	if err != nil {
		t.Fatalf("GetFileContents through a proxy that refuses SPDY: %v", err)
	}
	if got != "websocket\n" {
		t.Errorf("GetFileContents(/tmp/ws) over WebSocket = %q, want %q", got, "websocket\n")
	}
	dest := filepath.Join(t.TempDir(), "ws.tgz")
	if err := x.CopyFile(ctx, "main", "/tmp/ws", dest, gzip.DefaultCompression); err != nil {
		t.Fatalf("CopyFile over WebSocket: %v", err)
	}
	if fi, err := os.Stat(dest); err != nil || fi.Size() == 0 {
		t.Errorf("CopyFile over WebSocket wrote %v (err %v)", fi, err)
	}
	if err := x.Wait(ctx, []string{"main"}); err != nil {
		t.Fatalf("Wait through a proxy that refuses SPDY: %v", err)
	}
	if code, err := x.GetExitCode(ctx, "main"); err != nil || code != 0 {
		t.Errorf("GetExitCode = %d, %v; want 0", code, err)
	}
	if xs, xw := x.ExecSessions(); xs != 0 || xw < 3 {
		t.Errorf("the backend says SPDY carried %d exec sessions and WebSocket %d; want WebSocket for every session (read, copy, Wait)", xs, xw)
	}
	spdy, ws := proxy.counts()
	t.Logf("the proxy refused %d SPDY upgrades and carried %d WebSocket ones", spdy, ws)
	if spdy != 1 || ws < 3 {
		t.Errorf("proxy saw %d SPDY and %d WebSocket upgrades; want SPDY tried once and refused, then WebSocket for every session (read, copy, Wait)", spdy, ws)
	}
}

// spdyRefusingProxy forwards requests to the API server and refuses SPDY upgrades with a 400,
// counting both kinds of upgrade.
type spdyRefusingProxy struct {
	t        *testing.T
	target   *rest.Config
	once     sync.Once
	rp       *httputil.ReverseProxy
	mu       sync.Mutex
	spdy, ws int
}

func (p *spdyRefusingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.once.Do(func() {
		u, err := url.Parse(p.target.Host)
		if err != nil {
			p.t.Errorf("API server URL %q: %v", p.target.Host, err)
			return
		}
		tlsCfg, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: p.target.CAFile, CAData: p.target.CAData}})
		if err != nil {
			p.t.Errorf("TLS config for the API server: %v", err)
			return
		}
		p.rp = httputil.NewSingleHostReverseProxy(u)
		p.rp.Transport = &http.Transport{TLSClientConfig: tlsCfg}
	})
	if p.rp == nil {
		http.Error(w, "proxy not set up", http.StatusInternalServerError)
		return
	}
	upgrade := strings.ToLower(r.Header.Get("Upgrade"))
	p.mu.Lock()
	switch {
	case strings.HasPrefix(upgrade, "spdy/"):
		p.spdy++
	case upgrade == "websocket":
		p.ws++
	}
	p.mu.Unlock()
	if strings.HasPrefix(upgrade, "spdy/") {
		http.Error(w, "this proxy does not carry SPDY", http.StatusBadRequest)
		return
	}
	p.rp.ServeHTTP(w, r)
}

func (p *spdyRefusingProxy) counts() (spdy, ws int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spdy, p.ws
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

// TestK8sAPICopyThroughput measures, in one run, CopyFile of 256 MiB of random data
// (compression off) through the k8sapi backend against `kubectl cp` of the same file (the
// ratio), the API server's and kubelet's CPU during each, the cost of gzip apart, and the
// peak RSS of a fresh process doing one CopyFile of 64 MiB and of 256 MiB.
//
//	hack/e2e.sh -run K8sAPICopyThroughput
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

// TestK8sAPIWaitLatency measures Wait's latency from main's exit, read from a clock inside
// main (its last act is to print /proc/uptime, the kernel's boot clock, which containers
// share with this process; busybox's date has no %N), over 20 runs with the exec fast path
// and 5 with the watch alone, and says which path each run took.
//
//	hack/e2e.sh -run K8sAPIWaitLatency
func TestK8sAPIWaitLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 25 pods; not with -short")
	}
	f := framework.New(t)
	for _, mode := range []struct {
		name   string
		runs   int
		noExec bool
	}{{"exec fast path + watch", 20, false}, {"watch alone", 5, true}} {
		var samples []waitSample
		for i := range mode.runs {
			pod := scriptPod(f, fmt.Sprintf("wait-%v-%d", mode.noExec, i), waitLatencyPod)
			f.CreatePod(f.Context(), pod)
			x, err := k8sapi.New(k8sapi.Config{Kubeconfig: f.Env.Kubeconfig, Namespace: f.Namespace, PodName: pod.Name, NoExecWait: mode.noExec}, testLog(t, nil))
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, measureWait(t, f, pod.Name, x))
		}
		fast := logWaitLatency(t, "k8sapi, "+mode.name, "the exec fast path", "the watch", samples)
		switch {
		case mode.noExec && fast != 0:
			t.Errorf("%s: the exec fast path ended %d Waits with NoExecWait; want none", mode.name, fast)
		case !mode.noExec && fast < minFastWaits:
			t.Errorf("%s: the exec fast path ended %d of %d Waits, want at least %d: the fast path has stopped firing", mode.name, fast, mode.runs, minFastWaits)
		}
	}
}
