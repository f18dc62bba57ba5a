package kubeclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// request is what the fake API server saw.
type request struct {
	Method, Path, Query, ContentType, Body string
}

// apiServer answers every request with the JSON of answer(path) and
// records the requests.
func apiServer(t *testing.T, answer func(path string) any) (*Client, func() []request) {
	t.Helper()
	var mu sync.Mutex
	var seen []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if s, ok := answer(r.URL.Path).(string); ok {
			_, _ = io.WriteString(w, s)
			return
		}
		_ = json.NewEncoder(w).Encode(answer(r.URL.Path))
	}))
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c, func() []request {
		mu.Lock()
		defer mu.Unlock()
		return append([]request(nil), seen...)
	}
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: map[string]string{"a": "b"}}}
}

func TestPodsRequests(t *testing.T) {
	c, seen := apiServer(t, func(path string) any {
		switch path {
		case "/api/v1/namespaces/ns/pods/p1/log":
			return "line 1\nline 2\n"
		case "/apis/authentication.k8s.io/v1/selfsubjectreviews":
			return &authnv1.SelfSubjectReview{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "SelfSubjectReview"},
				Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: "system:serviceaccount:ns:argoexec"}}}
		}
		return pod("p1")
	})
	ctx := context.Background()
	pods := c.Pods("ns")

	got, err := pods.Get(ctx, "p1", metav1.GetOptions{ResourceVersion: "7"})
	if err != nil || got.Name != "p1" || got.Annotations["a"] != "b" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := pods.Patch(ctx, "p1", types.MergePatchType, []byte(`{"metadata":{}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("Patch: %v", err)
	}
	rc, err := pods.GetLogs("p1", &corev1.PodLogOptions{Container: "main", Stream: new(corev1.LogStreamStdout)}).Stream(ctx)
	if err != nil {
		t.Fatalf("GetLogs: %v", err)
	}
	logs, _ := io.ReadAll(rc)
	rc.Close()
	if string(logs) != "line 1\nline 2\n" {
		t.Errorf("log = %q", logs)
	}
	who, err := c.WhoAmI(ctx)
	if err != nil || who != "system:serviceaccount:ns:argoexec" {
		t.Errorf("WhoAmI = %q, %v", who, err)
	}
	want := []request{
		{Method: "GET", Path: "/api/v1/namespaces/ns/pods/p1", Query: "resourceVersion=7"},
		{Method: "PATCH", Path: "/api/v1/namespaces/ns/pods/p1", ContentType: "application/merge-patch+json", Body: `{"metadata":{}}`},
		{Method: "GET", Path: "/api/v1/namespaces/ns/pods/p1/log", Query: "container=main&stream=Stdout"},
		{Method: "POST", Path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", ContentType: "application/json"},
	}
	gotReqs := seen()
	if len(gotReqs) == 4 {
		// The review's body is the empty review; its exact JSON is client-go's.
		var r authnv1.SelfSubjectReview
		if err := json.Unmarshal([]byte(gotReqs[3].Body), &r); err != nil || r.Kind != "SelfSubjectReview" {
			t.Errorf("review body %q: %v", gotReqs[3].Body, err)
		}
		gotReqs[3].Body = ""
	}
	if diff := cmp.Diff(want, gotReqs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestExecURL: PodExecOptions become the query client-go's typed client
// sends (one command= per argument), through this scheme's codec.
func TestExecURL(t *testing.T) {
	c, err := New(&rest.Config{Host: "https://api.example:6443"})
	if err != nil {
		t.Fatal(err)
	}
	u := c.RESTClient().Post().Namespace("ns").Resource("pods").Name("p1").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: []string{"tar", "cf", "-", "/a b"}, Stdout: true, Stderr: true}, c.ParameterCodec()).URL()
	want := url.Values{"container": {"main"}, "command": {"tar", "cf", "-", "/a b"}, "stdout": {"true"}, "stderr": {"true"}}
	if u.Path != "/api/v1/namespaces/ns/pods/p1/exec" || !cmp.Equal(u.Query(), want) {
		t.Errorf("exec URL %s, want path /api/v1/namespaces/ns/pods/p1/exec and query %v", u, want)
	}
}

func TestWatch(t *testing.T) {
	ev := `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","namespace":"ns","resourceVersion":"9"}}}` + "\n"
	c, seen := apiServer(t, func(string) any { return ev })
	timeout := int64(30)
	w, err := c.Pods("ns").Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=p1", ResourceVersion: "8", TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := <-w.ResultChan()
	w.Stop()
	p, isPod := e.Object.(*corev1.Pod)
	if !ok || !isPod || p.ResourceVersion != "9" {
		t.Fatalf("event %+v", e)
	}
	q, _ := url.ParseQuery(seen()[0].Query)
	want := url.Values{"fieldSelector": {"metadata.name=p1"}, "resourceVersion": {"8"}, "timeout": {"30s"}, "timeoutSeconds": {"30"}, "watch": {"true"}}
	if !cmp.Equal(q, want) {
		t.Errorf("watch query %v, want %v", q, want)
	}
}
