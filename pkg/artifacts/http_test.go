package artifacts

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func TestHTTPLoad(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			if r.Header.Get("X-Token") != "t" || r.Header.Values("X-Multi")[1] != "2" {
				http.Error(w, "headers missing", http.StatusForbidden)
				return
			}
			io.WriteString(w, "plain body")
		case "/broken":
			http.Error(w, "backend down", http.StatusBadGateway)
		case "/chatty":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, strings.Repeat("e", errBodyBytes)+"TAIL")
		case "/hang":
			select { // never answers until the client gives up or the test ends
			case <-r.Context().Done():
			case <-release:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	// Long enough for every answering case on a loaded 2-core machine (100 ms was not);
	// the hanging case waits it out.
	h := NewHTTP(HTTPConfig{Client: NewHTTPClient(HTTPTimeouts{ResponseHeader: 2 * time.Second})}, discard())

	tests := []struct {
		name     string
		art      wf.HTTPArtifact
		want     string
		wantErr  string
		notFound bool
		notIn    string
	}{
		{name: "headers sent", art: wf.HTTPArtifact{URL: srv.URL + "/plain", Headers: []wf.Header{{Name: "X-Token", Value: "t"}, {Name: "X-Multi", Value: "1"}, {Name: "X-Multi", Value: "2"}}}, want: "plain body"},
		{name: "404 is not found", art: wf.HTTPArtifact{URL: srv.URL + "/missing"}, wantErr: "http: GET " + srv.URL + "/missing: 404 Not Found; check the url", notFound: true},
		{name: "5xx with its body", art: wf.HTTPArtifact{URL: srv.URL + "/broken"}, wantErr: "http: GET " + srv.URL + "/broken: 502 Bad Gateway: backend down"},
		{name: "only the start of a long body", art: wf.HTTPArtifact{URL: srv.URL + "/chatty"}, wantErr: "500 Internal Server Error: eeee", notIn: "TAIL"},
		{name: "forbidden", art: wf.HTTPArtifact{URL: srv.URL + "/plain"}, wantErr: "403 Forbidden: headers missing; the server refused the request: check the credentials the artifact's http.headers carry"},
		{name: "no response headers in time", art: wf.HTTPArtifact{URL: srv.URL + "/hang"}, wantErr: "timeout awaiting response headers"},
		{name: "unreachable", art: wf.HTTPArtifact{URL: "http://127.0.0.1:1/x"}, wantErr: "no answer; is the server up and reachable from the pod"},
		{name: "bad url", art: wf.HTTPArtifact{URL: "://nope"}, wantErr: `artifact "a": bad url`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "f")
			err := h.Load(context.Background(), wf.Artifact{Name: "a", HTTP: &tt.art}, dest)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(dest); string(b) != tt.want {
					t.Errorf("downloaded %q, want %q", b, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got := errors.Is(err, ErrNotFound); got != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", got, tt.notFound)
			}
			if tt.notIn != "" && strings.Contains(err.Error(), tt.notIn) {
				t.Errorf("err quotes the whole body: %v", err)
			}
		})
	}
}

func TestHTTPLoadCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := NewHTTP(HTTPConfig{}, discard()).Load(ctx, wf.Artifact{HTTP: &wf.HTTPArtifact{URL: srv.URL}}, filepath.Join(t.TempDir(), "f"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestHTTPSaveRefused(t *testing.T) {
	_, err := NewHTTP(HTTPConfig{}, discard()).Save(context.Background(), "f", wf.Artifact{Name: "a", HTTP: &wf.HTTPArtifact{URL: "http://x"}})
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("err = %v, want ErrNotSupported", err)
	}
}

// TestNewHTTPClient: each phase that can hang is bounded; the body is not,
// so a long download is never cut.
func TestNewHTTPClient(t *testing.T) {
	tests := []struct {
		name                          string
		in                            HTTPTimeouts
		connect, tls, responseHeaders time.Duration
	}{
		{name: "defaults", connect: 30 * time.Second, tls: 10 * time.Second, responseHeaders: 60 * time.Second},
		{name: "set", in: HTTPTimeouts{Connect: time.Second, TLSHandshake: 2 * time.Second, ResponseHeader: 3 * time.Second}, connect: time.Second, tls: 2 * time.Second, responseHeaders: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewHTTPClient(tt.in)
			tr := c.Transport.(*http.Transport)
			if c.Timeout != 0 {
				t.Errorf("overall timeout %v would cut long downloads", c.Timeout)
			}
			if c == http.DefaultClient || tr == http.DefaultTransport {
				t.Error("shares the process-wide default client")
			}
			if tr.TLSHandshakeTimeout != tt.tls || tr.ResponseHeaderTimeout != tt.responseHeaders || tr.DialContext == nil {
				t.Errorf("TLS %v, response headers %v; want %v, %v", tr.TLSHandshakeTimeout, tr.ResponseHeaderTimeout, tt.tls, tt.responseHeaders)
			}
		})
	}
}
