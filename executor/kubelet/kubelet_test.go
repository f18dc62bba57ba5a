package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/internal/stdoutlog"
)

// The flow settles and checks main's log through LogChecker before it
// reports the result.
var _ flow.LogChecker = (*Executor)(nil)

const (
	testNS  = "argo"
	testPod = "wf-step-1"
	testSA  = "system:serviceaccount:argo:workflow"
)

// fakeKubelet is an HTTPS kubelet: handlers per path prefix, and a record of
// the bearer tokens it was sent.
type fakeKubelet struct {
	srv *httptest.Server

	mu     sync.Mutex
	tokens []string
	// pods answers GET /pods; nil means 404.
	pods func(w http.ResponseWriter, r *http.Request)
	// logs answers GET /containerLogs/...
	logs func(w http.ResponseWriter, r *http.Request)
	// exec answers /exec/...
	exec func(w http.ResponseWriter, r *http.Request)
}

func newFakeKubelet(t *testing.T) *fakeKubelet {
	t.Helper()
	f := &fakeKubelet{}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.tokens = append(f.tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		pods, logs, exec := f.pods, f.logs, f.exec
		f.mu.Unlock()
		switch {
		case r.URL.Path == "/pods" && pods != nil:
			pods(w, r)
		case strings.HasPrefix(r.URL.Path, "/containerLogs/") && logs != nil:
			logs(w, r)
		case strings.HasPrefix(r.URL.Path, "/exec/") && exec != nil:
			exec(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // wrong-CA handshakes are expected
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeKubelet) setPods(h func(w http.ResponseWriter, r *http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = h
}

func (f *fakeKubelet) seenTokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tokens...)
}

// servePods answers /pods with a list holding pods.
func servePods(pods ...corev1.Pod) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(corev1.PodList{
			TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
			Items:    pods,
		})
	}
}

// serveStatus answers with code and body.
func serveStatus(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// writeFile writes content to a new file in a test directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// caFile writes srv's certificate as a CA bundle.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return writeFile(t, "ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
}

// otherCAFile writes a fresh self-signed CA that signed nothing the fake
// kubelet serves (httptest servers all share one certificate).
func otherCAFile(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "some other CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "other-ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
}

// jwt is an unsigned token whose sub claim is sub.
func jwt(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"sub":"`+sub+`"}`)) + ".c2ln"
}

type testEnv struct {
	f         *fakeKubelet
	cfg       Config
	log       *logrus.Entry
	hook      *logtest.Hook
	tokenFile string
}

// newEnv starts a fake kubelet and a Config that trusts it.
func newEnv(t *testing.T) *testEnv {
	t.Helper()
	f := newFakeKubelet(t)
	host, port, err := net.SplitHostPort(f.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	tokenFile := writeFile(t, "token", jwt(testSA)+"\n")
	return &testEnv{
		f:   f,
		log: logrus.NewEntry(logger),
		cfg: Config{
			Host: host, Port: p, CAFile: caFile(t, f.srv), TokenFile: tokenFile,
			Namespace: testNS, PodName: testPod,
		},
		hook:      hook,
		tokenFile: tokenFile,
	}
}

// executor builds the backend for env, on a clock whose poll intervals pass
// at once (see stepClock).
func (env *testEnv) executor(t *testing.T) *Executor {
	t.Helper()
	x, err := New(env.cfg, env.log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return withClock(x, newStepClock(false))
}

// pod builds the test pod with containers in the given states.
func pod(states map[string]corev1.ContainerState, names ...string) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testPod},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		if st, ok := states[n]; ok {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: n, State: st})
		}
	}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: terminated(0)}}
	return p
}

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func terminated(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
}

func otherPod(ns, name string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantContains(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", words)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\n does not contain %q", err, w)
		}
	}
}

func TestNewConfig(t *testing.T) {
	env := newEnv(t)
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string // error words; nil means success
	}{
		{"defaults", func(*Config) {}, nil},
		{"no host", func(c *Config) { c.Host = "" }, []string{"host is empty", "ARGO_KUBELET_HOST"}},
		{"no pod", func(c *Config) { c.PodName = "" }, []string{"ARGO_POD_NAME"}},
		{"bad port", func(c *Config) { c.Port = 70000 }, []string{"70000", "kubeletPort"}},
		{"bad poll", func(c *Config) { c.PollInitial, c.PollMax = time.Second, time.Millisecond }, []string{"poll intervals"}},
		{"missing CA", func(c *Config) { c.CAFile = "/nonexistent/ca.crt" }, []string{"/nonexistent/ca.crt", "kubeletCAFile", "kubeletInsecure"}},
		{"CA not PEM", func(c *Config) { c.CAFile = writeFile(t, "bad.crt", "junk") }, []string{"no PEM certificate", "kubeletCAFile"}},
		{"insecure ignores CA", func(c *Config) { c.Insecure, c.CAFile = true, "/nonexistent/ca.crt" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := env.cfg
			tt.mutate(&cfg)
			x, err := New(cfg, env.log)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if x.cfg.PollInitial != DefaultPollInitial || x.cfg.PollMax != DefaultPollMax {
					t.Errorf("poll defaults = %v, %v", x.cfg.PollInitial, x.cfg.PollMax)
				}
				return
			}
			wantContains(t, err, tt.want...)
		})
	}
	t.Run("zero values take defaults", func(t *testing.T) {
		c := Config{}.withDefaults()
		if c.Port != 10250 || c.CAFile == "" || c.TokenFile == "" {
			t.Errorf("defaults = %+v", c)
		}
	})
}

func TestTLS(t *testing.T) {
	env := newEnv(t)
	env.f.setPods(servePods(pod(nil, "main")))
	wrongCA := otherCAFile(t)

	tests := []struct {
		name     string
		insecure bool
		ca       string
		want     []string // error words; nil means success
		warning  bool
	}{
		{name: "right CA", ca: env.cfg.CAFile},
		{name: "wrong CA", ca: wrongCA, want: []string{
			"x509", env.f.srv.Listener.Addr().String(), wrongCA, "kubeletCAFile", "kubeletInsecure",
		}},
		{name: "insecure", insecure: true, ca: wrongCA, warning: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.hook.Reset()
			cfg := env.cfg
			cfg.CAFile, cfg.Insecure = tt.ca, tt.insecure
			x, err := New(cfg, env.log)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			for range 2 { // the warning is logged once, not per request
				_, err = x.ListContainerNames(ctxT(t))
			}
			if tt.want == nil && err != nil {
				t.Fatalf("ListContainerNames: %v", err)
			}
			if tt.want != nil {
				wantContains(t, err, tt.want...)
				var te *TLSError
				if !errors.As(err, &te) {
					t.Errorf("error %v is not a *TLSError", err)
				}
			}
			warnings := 0
			for _, e := range env.hook.AllEntries() {
				if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "kubeletInsecure") {
					warnings++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tt.warning]; warnings != want {
				t.Errorf("logged %d insecure warnings, want %d", warnings, want)
			}
		})
	}
}

func TestStatusErrors(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name    string
		handler func(http.ResponseWriter, *http.Request)
		code    int
		want    []string
		notWant string
	}{
		{"401", serveStatus(401, "Unauthorized"), 401,
			[]string{"401 Unauthorized", "token", "service account " + testSA, "list pods"}, ""},
		{"403 from a kubelet with fine-grained authorization", serveStatus(403, "Forbidden (user="+testSA+", verb=get, resource=nodes, subresource(s)=[pods proxy])"), 403,
			[]string{"403 Forbidden", "service account " + testSA, `verb "get" on resource nodes/pods`, "granting nodes/pods get", "manifests/overlays/kubelet"}, "grant nodes/proxy"},
		{"403 from an older kubelet: nodes/pods does not help", serveStatus(403, "Forbidden (user="+testSA+", verb=get, resource=nodes, subresource(s)=[proxy])"), 403,
			[]string{"403 Forbidden", "service account " + testSA, `verb "get" on resource nodes/proxy`, "older than Kubernetes 1.33", "KubeletFineGrainedAuthz", "grant nodes/proxy get"}, "granting nodes/pods"},
		{"403 that names no subresource", serveStatus(403, "Forbidden"), 403,
			[]string{"403 Forbidden", "service account " + testSA, `verb "get" on resource nodes/pods`, "or nodes/proxy (older kubelets", "grant nodes/pods get"}, ""},
		{"500 with a long body", serveStatus(500, "internal trouble: "+long), 500,
			[]string{"500 Internal Server Error", "internal trouble: xxx", "(truncated)"}, long},
		{"503", serveStatus(503, "busy"), 503, []string{"503", "busy"}, ""},
		{"302 is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://apiserver.invalid/pods", http.StatusFound)
		}, 302, []string{"302"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			env.f.setPods(tt.handler)
			x := env.executor(t)
			_, err := x.ListContainerNames(ctxT(t))
			t.Logf("error: %v", err)
			wantContains(t, err, tt.want...)
			if env.cfg.TokenFile != "" && tt.code == 401 {
				wantContains(t, err, env.tokenFile)
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tt.code {
				t.Errorf("error %v: want a *StatusError with code %d", err, tt.code)
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("error holds the whole %d-byte body", len(tt.notWant))
			}
		})
	}
}

// TestLogsForbidden: /containerLogs is authorised as nodes/proxy alone, even
// on a kubelet with fine-grained authorization, so its 403 names nodes/proxy
// get, never nodes/pods.
func TestLogsForbidden(t *testing.T) {
	env := newEnv(t)
	env.f.logs = serveStatus(403, "Forbidden (user="+testSA+", verb=get, resource=nodes, subresource(s)=[proxy])")
	x := env.executor(t)
	_, err := x.GetOutputStream(ctxT(t), "main", true)
	t.Logf("error: %v", err)
	wantContains(t, err, "403", "service account "+testSA, `verb "get" on resource nodes/proxy`,
		"granting nodes/proxy get", "authorises /containerLogs as nodes/proxy only")
	if err != nil && strings.Contains(err.Error(), "nodes/pods") {
		t.Errorf("error %v names nodes/pods, which does not open /containerLogs", err)
	}
}

// TestLogsAuthorizerUnreachable: while the kubelet cannot check a grant with
// the API server (500 "Authorization error", as just after the API server
// restarted) the request is asked again on a backoff; a kubelet that keeps
// failing gives the error after authRetryAttempts tries.
func TestLogsAuthorizerUnreachable(t *testing.T) {
	const authErr = "Authorization error (user=" + testSA + ", verb=get, resource=nodes, subresource=proxy)"
	for _, tc := range []struct {
		name      string
		failures  int
		forbidden int // 403s after the failures: the API server's RBAC caches still filling
		wantErr   string
		wantTries int
	}{
		{name: "passes after two", failures: 2, wantTries: 3},
		{name: "gives up", failures: 100, wantErr: "Authorization error", wantTries: authRetryAttempts},
		{name: "a 403 right after the outage is asked again", failures: 5, forbidden: 2, wantTries: 8},
		{name: "a 403 that comes first is final", forbidden: 1, wantErr: "403", wantTries: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			var mu sync.Mutex
			tries := 0
			env.f.logs = func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				tries++
				n := tries
				mu.Unlock()
				switch {
				case n <= tc.failures:
					serveStatus(http.StatusInternalServerError, authErr)(w, nil)
					return
				case n <= tc.failures+tc.forbidden:
					serveStatus(http.StatusForbidden, "Forbidden (user="+testSA+", verb=get, resource=nodes, subresource(s)=[proxy])")(w, nil)
					return
				}
				_, _ = io.WriteString(w, "hello\n")
			}
			clk := newStepClock(false)
			x := withClock(env.executor(t), clk)
			rc, err := x.GetOutputStream(ctxT(t), "main", true)
			if tc.wantErr != "" {
				wantContains(t, err, tc.wantErr)
			} else {
				if err != nil {
					t.Fatalf("GetOutputStream: %v", err)
				}
				b, _ := io.ReadAll(rc)
				rc.Close()
				if string(b) != "hello\n" {
					t.Errorf("log %q, want hello", b)
				}
			}
			if tries != tc.wantTries {
				t.Errorf("%d requests, want %d", tries, tc.wantTries)
			}
			if got := clk.got(); len(got) != tc.wantTries-1 || len(got) > 0 && got[0] != authRetryFirst {
				t.Errorf("waited %v between tries, want %d waits from %v", got, tc.wantTries-1, authRetryFirst)
			}
		})
	}
}

func TestTokenReadOnEveryRequest(t *testing.T) {
	env := newEnv(t)
	env.f.setPods(servePods(pod(nil, "main")))
	x := env.executor(t)
	for _, tok := range []string{"first-token", "rotated-token"} {
		if err := os.WriteFile(env.tokenFile, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := x.ListContainerNames(ctxT(t)); err != nil {
			t.Fatalf("ListContainerNames: %v", err)
		}
	}
	got := env.f.seenTokens()
	if want := []string{"first-token", "rotated-token"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("kubelet saw tokens %q, want %q", got, want)
	}

	if err := os.Remove(env.tokenFile); err != nil {
		t.Fatal(err)
	}
	_, err := x.ListContainerNames(ctxT(t))
	wantContains(t, err, "read service-account token", env.tokenFile)
}

// TestGetOutputStream: combined is the plain log; stdout alone is asked for
// with stream=Stdout, trusted only once a probe shows the kubelet knows the
// parameter, and refused (remembered) where the gate is off or the kubelet
// ignores the parameter.
func TestGetOutputStream(t *testing.T) {
	gateOff := func(stream string) int {
		if stream != "" {
			return http.StatusBadRequest // server.go: "Please enable PodLogsQuerySplitStreams feature gate in kubelet"
		}
		return 0
	}
	for _, tt := range []struct {
		name string
		// status answers a request for stream ("" for none); 0 serves the log.
		status      func(stream string) int
		wantStdout  bool
		wantStreams []string // the stream parameter of each request after the combined one
	}{
		{
			name: "gate on",
			status: func(stream string) int {
				if stream == stdoutlog.ProbeStream {
					return http.StatusUnprocessableEntity
				}
				return 0
			},
			wantStdout:  true,
			wantStreams: []string{"Stdout", stdoutlog.ProbeStream, "Stdout"},
		},
		{name: "gate off", status: gateOff, wantStreams: []string{"Stdout", stdoutlog.ProbeStream}}, // the probe runs beside the first request
		{name: "kubelet older than 1.32 ignores the parameter", status: func(string) int { return 0 }, wantStreams: []string{"Stdout", stdoutlog.ProbeStream}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			var mu sync.Mutex
			var paths, streams []string
			env.f.logs = func(w http.ResponseWriter, r *http.Request) {
				stream := r.URL.Query().Get("stream")
				mu.Lock()
				paths, streams = append(paths, r.URL.Path), append(streams, stream)
				mu.Unlock()
				if strings.HasSuffix(r.URL.Path, "/nosuch") {
					http.Error(w, `container "nosuch" not found in pod`, http.StatusNotFound)
					return
				}
				if code := tt.status(stream); code != 0 {
					http.Error(w, "refused", code)
					return
				}
				_, _ = io.WriteString(w, "out\nerr\n")
			}
			x := env.executor(t)
			rc, err := x.GetOutputStream(ctxT(t), "main", true)
			if err != nil {
				t.Fatalf("GetOutputStream: %v", err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(b) != "out\nerr\n" {
				t.Errorf("log = %q, %v", b, err)
			}
			for range 2 {
				rc, err := x.GetOutputStream(ctxT(t), "main", false)
				if tt.wantStdout {
					if err != nil {
						t.Fatalf("GetOutputStream(combined=false): %v", err)
					}
					rc.Close()
					continue
				}
				if !errors.Is(err, executor.ErrNotSupported) || !strings.Contains(err.Error(), "PodLogsQuerySplitStreams") {
					t.Errorf("GetOutputStream(combined=false) = %v, want ErrNotSupported naming the feature gate", err)
				}
			}
			_, err = x.GetOutputStream(ctxT(t), "nosuch", true)
			wantContains(t, err, `container "nosuch"`, "404")
			mu.Lock()
			defer mu.Unlock()
			if want := "/containerLogs/" + testNS + "/" + testPod + "/main"; paths[0] != want {
				t.Errorf("path = %q, want %q", paths[0], want)
			}
			// The probe and the first stdout-only request run side by side, in either order.
			got := slices.Sorted(slices.Values(streams[1 : len(streams)-1]))
			if streams[0] != "" || !slices.Equal(got, slices.Sorted(slices.Values(tt.wantStreams))) {
				t.Errorf("stream parameters = %q, want none, then %q", streams, tt.wantStreams)
			}
		})
	}
}

func TestGetOutputStreamCancelledMidStream(t *testing.T) {
	env := newEnv(t)
	served := make(chan struct{})
	env.f.logs = func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first line\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a following log that never ends
		close(served)
	}
	x := env.executor(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc, err := x.GetOutputStream(ctx, "main", true)
	if err != nil {
		t.Fatalf("GetOutputStream: %v", err)
	}
	defer rc.Close()
	buf := make([]byte, len("first line\n"))
	if _, err := io.ReadFull(rc, buf); err != nil || string(buf) != "first line\n" {
		t.Fatalf("first read = %q, %v", buf, err)
	}
	cancel()
	_, err = io.ReadAll(rc)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel = %v, want an error wrapping context.Canceled", err)
	}
	wantContains(t, err, `log of container "main"`)
	<-served // the server saw the request end
}

func TestGetExitCodeAndNames(t *testing.T) {
	env := newEnv(t)
	env.f.setPods(servePods(
		otherPod("other", testPod),
		pod(map[string]corev1.ContainerState{"main": terminated(3), "side": running()}, "main", "side", "pending"),
		otherPod(testNS, "zzz"),
	))
	x := env.executor(t)

	names, err := x.ListContainerNames(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, ","); got != "init,main,side,pending" {
		t.Errorf("ListContainerNames = %s, want init first", got)
	}

	tests := []struct {
		container string
		code      int
		want      []string
	}{
		{container: "main", code: 3},
		{container: "init", code: 0},
		{container: "side", want: []string{`"side"`, "running", "not terminated"}},
		{container: "pending", want: []string{`"pending"`, "not terminated (no status yet)"}},
		{container: "nosuch", want: []string{`"nosuch"`, "no container nosuch", "init main side pending"}},
	}
	for _, tt := range tests {
		t.Run(tt.container, func(t *testing.T) {
			code, err := x.GetExitCode(ctxT(t), tt.container)
			if tt.want != nil {
				wantContains(t, err, tt.want...)
				return
			}
			if err != nil || code != tt.code {
				t.Errorf("GetExitCode = %d, %v; want %d", code, err, tt.code)
			}
		})
	}
}

func TestPodNotListed(t *testing.T) {
	env := newEnv(t)
	env.f.setPods(servePods(otherPod(testNS, "a"), otherPod(testNS, "b")))
	x := env.executor(t)
	_, err := x.GetExitCode(ctxT(t), "main")
	if !errors.Is(err, ErrPodNotFound) {
		t.Errorf("error %v does not wrap ErrPodNotFound", err)
	}
	wantContains(t, err, testNS+"/"+testPod, "2 pods", "status.hostIP")
}
