//go:build e2e

// The k8sapi backend on the testbed's real API server and kubelet: the conformance suite
// against a real pod, with a service account that holds exactly the RBAC the backend
// documents; the 403 text when pods/exec is missing; and the figures of issue 4 (CopyFile of
// 256 MiB against `kubectl cp` in the same run, Wait latency from main's own clock).
package e2e

import (
	"compress/gzip"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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
