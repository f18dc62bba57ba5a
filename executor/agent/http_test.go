package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// seen is what the target server received.
type seen struct {
	mu      sync.Mutex
	calls   int
	method  string
	header  http.Header
	body    string
	pathHit string
}

// target answers every request with status, header X-Kind and body, and
// records it.
func target(t *testing.T, status int, body string) (*httptest.Server, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.calls++
		s.method, s.header, s.body, s.pathHit = r.Method, r.Header.Clone(), string(b), r.URL.Path
		s.mu.Unlock()
		w.Header().Set("Server", "target")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

func testLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// newTestAgent is an agent over a fake API server holding the secrets
// given, with its HTTP clients.
func newTestAgent(clk clock.WithTickerAndDelayedExecution, secrets ...runtime.Object) *Agent {
	a := &Agent{
		Config: Config{Namespace: "argo", WorkflowName: "wf"},
		Client: fakeSecrets(secrets...),
		Clock:  clk,
		Log:    testLog(),
	}
	a.clients = newHTTPClients(nil)
	return a
}

// fakeSecrets is a fake dynamic client that serves the secrets given.
func fakeSecrets(secrets ...runtime.Object) *dynamicfake.FakeDynamicClient {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	return dynamicfake.NewSimpleDynamicClient(scheme, secrets...)
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "argo", Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestRunHTTP(t *testing.T) {
	ok, _ := target(t, 200, "hello")
	created, _ := target(t, 201, "made it")
	missing, _ := target(t, 404, "not here")
	google, _ := target(t, 200, "<html>google</html>")
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "tls") }))
	t.Cleanup(tlsSrv.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	big, _ := target(t, 200, strings.Repeat("x", MaxResponseBytes+1))

	tests := []struct {
		name        string
		http        wf.HTTPTemplate
		wantPhase   wf.NodePhase
		wantMessage string // substring; "" means the message must be empty
		wantResult  *string
	}{
		{"no condition, 200", wf.HTTPTemplate{URL: ok.URL}, wf.NodeSucceeded, "", ptr.To("hello")},
		{"no condition, 201 is 2xx", wf.HTTPTemplate{URL: created.URL}, wf.NodeSucceeded, "", ptr.To("made it")},
		{"no condition, 404 fails and keeps the body", wf.HTTPTemplate{URL: missing.URL}, wf.NodeFailed, "received non-2xx response code: 404", ptr.To("not here")},
		{"status condition holds", wf.HTTPTemplate{URL: created.URL, SuccessCondition: "response.statusCode == 201"}, wf.NodeSucceeded, "", ptr.To("made it")},
		{"status condition fails", wf.HTTPTemplate{URL: ok.URL, SuccessCondition: "response.statusCode == 201"}, wf.NodeFailed,
			"successCondition 'response.statusCode == 201' evaluated false", ptr.To("hello")},
		{"a condition can accept a 404", wf.HTTPTemplate{URL: missing.URL, SuccessCondition: "response.statusCode == 404"}, wf.NodeSucceeded, "", ptr.To("not here")},
		{"body condition", wf.HTTPTemplate{URL: google.URL, SuccessCondition: `response.body contains "google"`}, wf.NodeSucceeded, "", ptr.To("<html>google</html>")},
		{"header condition", wf.HTTPTemplate{URL: ok.URL, SuccessCondition: `response.headers["Server"][0] == "target"`}, wf.NodeSucceeded, "", ptr.To("hello")},
		{"request in scope", wf.HTTPTemplate{URL: ok.URL, Method: "PUT", Body: "b", Headers: []wf.HTTPHeader{{Name: "X-A", Value: "1"}},
			SuccessCondition: `request.method == "PUT" && request.body == "b" && request.headers["X-A"][0] == "1"`}, wf.NodeSucceeded, "", ptr.To("hello")},
		{"condition does not compile", wf.HTTPTemplate{URL: ok.URL, SuccessCondition: "response.statusCode =="}, wf.NodeFailed, "unable to evaluate expression 'response.statusCode =='", nil},
		{"condition is not a boolean", wf.HTTPTemplate{URL: ok.URL, SuccessCondition: "response.statusCode"}, wf.NodeFailed, "unable to cast expression result '200' to bool", nil},
		{"TLS verified fails", wf.HTTPTemplate{URL: tlsSrv.URL}, wf.NodeFailed, "certificate", nil},
		{"insecureSkipVerify", wf.HTTPTemplate{URL: tlsSrv.URL, InsecureSkipVerify: true}, wf.NodeSucceeded, "", ptr.To("tls")},
		{"server down", wf.HTTPTemplate{URL: gone.URL}, wf.NodeFailed, "HTTP GET " + gone.URL + ": ", nil},
		{"bad URL", wf.HTTPTemplate{URL: "::nope"}, wf.NodeFailed, "build the request", nil},
		{"zero timeout refused", wf.HTTPTemplate{URL: ok.URL, TimeoutSeconds: ptr.To[int64](0)}, wf.NodeFailed, "timeoutSeconds is 0: set a positive number", nil},
		{"body too big", wf.HTTPTemplate{URL: big.URL}, wf.NodeFailed, "the response body is over 1048576 bytes", nil},
		{"secret missing", wf.HTTPTemplate{URL: ok.URL, Headers: []wf.HTTPHeader{{Name: "Authorization", ValueFrom: &wf.HTTPHeaderSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "token"}}}}},
			wf.NodeFailed, `header "Authorization": read secret argo/nope: `, nil},
		{"secret key missing", wf.HTTPTemplate{URL: ok.URL, Headers: []wf.HTTPHeader{{Name: "Authorization", ValueFrom: &wf.HTTPHeaderSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "other"}}}}},
			wf.NodeFailed, `secret argo/api has no key "other"`, nil},
	}
	a := newTestAgent(clock.RealClock{}, secret("api", map[string]string{"token": "Bearer s3cr3t"}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := a.runHTTP(context.Background(), &tt.http, a.Log)
			if got.Phase != tt.wantPhase {
				t.Errorf("phase = %q, want %q (message %q)", got.Phase, tt.wantPhase, got.Message)
			}
			if tt.wantMessage == "" && got.Message != "" || !strings.Contains(got.Message, tt.wantMessage) {
				t.Errorf("message = %q, want %q", got.Message, tt.wantMessage)
			}
			switch {
			case tt.wantResult == nil && got.Outputs != nil:
				t.Errorf("outputs = %+v, want none", got.Outputs)
			case tt.wantResult != nil && (got.Outputs == nil || got.Outputs.Result == nil || *got.Outputs.Result != *tt.wantResult):
				t.Errorf("outputs = %+v, want result %q", got.Outputs, *tt.wantResult)
			}
		})
	}
}

// TestRunHTTPSendsTheRequest: method, plain and secret headers, and body
// reach the server as the template says.
func TestRunHTTPSendsTheRequest(t *testing.T) {
	srv, s := target(t, 200, "ok")
	a := newTestAgent(clock.RealClock{}, secret("api", map[string]string{"token": "Bearer s3cr3t"}))
	h := &wf.HTTPTemplate{
		Method: "POST", URL: srv.URL + "/things", Body: `{"a":1}`,
		Headers: []wf.HTTPHeader{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Authorization", ValueFrom: &wf.HTTPHeaderSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token"}}},
		},
	}
	if got := a.runHTTP(context.Background(), h, a.Log); got.Phase != wf.NodeSucceeded {
		t.Fatalf("result = %+v", got)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls != 1 || s.method != "POST" || s.pathHit != "/things" || s.body != `{"a":1}` ||
		s.header.Get("Content-Type") != "application/json" || s.header.Get("Authorization") != "Bearer s3cr3t" {
		t.Errorf("server saw %d calls: %s %s body %q headers %v", s.calls, s.method, s.pathHit, s.body, s.header)
	}
}

// TestRunHTTPSecretForbidden: a refused secret read names the grant.
func TestRunHTTPSecretForbidden(t *testing.T) {
	srv, s := target(t, 200, "ok")
	a := newTestAgent(clock.RealClock{})
	a.Client.(*dynamicfake.FakeDynamicClient).PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "api", nil)
	})
	h := &wf.HTTPTemplate{URL: srv.URL, Headers: []wf.HTTPHeader{{Name: "Authorization", ValueFrom: &wf.HTTPHeaderSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token"}}}}}
	got := a.runHTTP(context.Background(), h, a.Log)
	if got.Phase != wf.NodeFailed || !strings.Contains(got.Message, `needs RBAC verb "get" on resource "secrets" in namespace argo`) {
		t.Errorf("result = %+v", got)
	}
	if s.calls != 0 {
		t.Errorf("the request was sent without its header (%d calls)", s.calls)
	}
}

// TestRunHTTPTimeout: a server that does not answer fails the node once
// timeoutSeconds pass on the agent's clock, saying so.
func TestRunHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	clk := clocktesting.NewFakeClock(time.Now())
	a := newTestAgent(clk)
	done := make(chan wf.NodeResult, 1)
	go func() {
		done <- a.runHTTP(context.Background(), &wf.HTTPTemplate{URL: srv.URL, TimeoutSeconds: ptr.To[int64](5)}, a.Log)
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(4 * time.Second)
	select {
	case got := <-done:
		t.Fatalf("returned before the timeout: %+v", got)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(time.Second)
	got := <-done
	if got.Phase != wf.NodeFailed || !strings.Contains(got.Message, "no answer within 5s (the template's timeoutSeconds)") {
		t.Errorf("result = %+v", got)
	}
}
