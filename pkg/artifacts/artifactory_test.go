package artifacts

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// fakeArtifactory stores PUT bodies by path and serves them to GET, with
// basic authentication required.
type fakeArtifactory struct {
	mu         sync.Mutex
	files      map[string][]byte
	user, pass string
	// status, when set, answers every request.
	status int
	// failures answers that many requests 503 first.
	failures int
	// sum is sent as X-Checksum-Sha256 on GET when set.
	sum      string
	requests int
	sums     []string
}

func (f *fakeArtifactory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.failures > 0 {
		f.failures--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
		io.WriteString(w, "told to fail")
		return
	}
	if u, p, ok := r.BasicAuth(); !ok || u != f.user || p != f.pass {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"errors":[{"status":401,"message":"Bad credentials"}]}`)
		return
	}
	switch r.Method {
	case http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		f.files[r.URL.Path] = b
		f.sums = append(f.sums, r.Header.Get(artifactoryChecksumHeader))
		w.WriteHeader(http.StatusCreated)
	case http.MethodGet:
		b, ok := f.files[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if f.sum != "" {
			w.Header().Set(artifactoryChecksumHeader, f.sum)
		}
		w.Write(b)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// secretDir writes the secret files NAME/KEY under a new directory.
func secretDir(t *testing.T, files map[string]string) SecretFiles {
	t.Helper()
	root := t.TempDir()
	for p, v := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return SecretFiles{Root: root}
}

func serveArtifactory(t *testing.T) (*fakeArtifactory, string) {
	f := &fakeArtifactory{files: map[string][]byte{}, user: "alice", pass: "s3cret"}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func rtArt(url string) wf.Artifact {
	return wf.Artifact{Name: "art", Artifactory: &wf.ArtifactoryArtifact{URL: url,
		ArtifactoryAuth: wf.ArtifactoryAuth{UsernameSecret: sel("rt", "user"), PasswordSecret: sel("rt", "pass")}}}
}

func TestArtifactoryRoundTrip(t *testing.T) {
	f, base := serveArtifactory(t)
	secrets := secretDir(t, map[string]string{"rt/user": "alice", "rt/pass": "s3cret"})
	a := NewArtifactory(ArtifactoryConfig{Secrets: secrets, Backoff: time.Millisecond}, discard())
	ctx := context.Background()
	obj, err := a.Save(ctx, writeFile(t, "hello"), rtArt(base+"/generic/wf/pod/art.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	const sum = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	if obj.Key != "/generic/wf/pod/art.tgz" || obj.Size != 5 || obj.SHA256 != sum || len(f.sums) != 1 || f.sums[0] != sum {
		t.Errorf("Save = %+v, sent checksums %v", obj, f.sums)
	}
	dest := filepath.Join(t.TempDir(), "got")
	f.sum = sum
	if err := a.Load(ctx, rtArt(base+"/generic/wf/pod/art.tgz"), dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "hello" {
		t.Errorf("loaded %q", b)
	}
	f.sum = strings.Repeat("0", 64)
	if err := a.Load(ctx, rtArt(base+"/generic/wf/pod/art.tgz"), dest); err == nil || !strings.Contains(err.Error(), "does not match the server's SHA-256") {
		t.Errorf("Load with a wrong checksum: %v", err)
	}
}

// TestArtifactoryRelocate: an artifact with only a path (as Argo reports
// an output) or no secrets takes the archiveLocation's host and secrets.
func TestArtifactoryRelocate(t *testing.T) {
	f, base := serveArtifactory(t)
	f.files["/generic/wf/pod/art.tgz"] = []byte("x")
	secrets := secretDir(t, map[string]string{"rt/user": "alice", "rt/pass": "s3cret"})
	def := rtArt(base + "/generic/wf/other-pod").Artifactory
	a := NewArtifactory(ArtifactoryConfig{Default: def, Secrets: secrets, Backoff: time.Millisecond}, discard())
	tests := []struct {
		name string
		art  wf.Artifact
	}{
		{name: "path only", art: wf.Artifact{Name: "art", Artifactory: &wf.ArtifactoryArtifact{URL: "/generic/wf/pod/art.tgz"}}},
		{name: "no usernameSecret", art: wf.Artifact{Name: "art", Artifactory: &wf.ArtifactoryArtifact{URL: "http://elsewhere/generic/wf/pod/art.tgz"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := a.Load(context.Background(), tt.art, filepath.Join(t.TempDir(), "got")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestArtifactoryErrors(t *testing.T) {
	good := map[string]string{"rt/user": "alice", "rt/pass": "s3cret"}
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}()
	tests := []struct {
		name     string
		secrets  map[string]string
		status   int
		failures int
		url      string // empty: the fake's
		save     bool
		dir      bool
		want     []string
		notFound bool
		requests int // -1: don't check
	}{
		{name: "missing object", secrets: good, want: []string{"artifactory: GET", "404", "check the url", "object not found"}, notFound: true, requests: 1},
		{name: "bad password", secrets: map[string]string{"rt/user": "alice", "rt/pass": "wrong"},
			want: []string{"401 Unauthorized", "Bad credentials", "credentials refused: check the secrets named by usernameSecret and passwordSecret"}, requests: 1},
		{name: "bad password on save", secrets: map[string]string{"rt/user": "alice", "rt/pass": "wrong"}, save: true,
			want: []string{"artifactory: PUT", "401 Unauthorized", "credentials refused"}, requests: 1},
		{name: "forbidden", secrets: good, status: http.StatusForbidden, want: []string{"403 Forbidden", "credentials refused"}, requests: 1},
		{name: "no PUT", secrets: good, status: http.StatusMethodNotAllowed, save: true, want: []string{"405", "does not take PUT"}, requests: 1},
		{name: "secret not mounted", secrets: map[string]string{"rt/user": "alice"},
			want: []string{"artifactory: credentials for", "artifactory.passwordSecret", `key "pass" of secret "rt" is not mounted`}, requests: 0},
		{name: "unreachable", secrets: good, url: closed + "/generic/a.tgz",
			want: []string{"artifactory: GET", "the server did not answer (3 tries)", "reachable from the pod"}, requests: -1},
		{name: "5xx retried until it answers", secrets: good, failures: 2, want: []string{"404"}, notFound: true, requests: 3},
		{name: "5xx retried, then given up", secrets: good, failures: 5, want: []string{"503 Service Unavailable"}, requests: 3},
		{name: "not a URL", secrets: good, url: "ftp://x/y", want: []string{`url "ftp://x/y" is not an absolute http(s) URL`}, requests: 0},
		{name: "a directory", secrets: good, save: true, dir: true, want: []string{"is a directory", "drop `archive: none`", "not supported"}, requests: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, base := serveArtifactory(t)
			f.status, f.failures = tt.status, tt.failures
			a := NewArtifactory(ArtifactoryConfig{Secrets: secretDir(t, tt.secrets), Backoff: time.Millisecond,
				Client: NewHTTPClient(HTTPTimeouts{Connect: 10 * time.Second})}, discard())
			u := tt.url
			if u == "" {
				u = base + "/generic/missing.tgz"
			}
			var err error
			switch {
			case tt.save && tt.dir:
				_, err = a.Save(context.Background(), t.TempDir(), rtArt(u))
			case tt.save:
				_, err = a.Save(context.Background(), writeFile(t, "x"), rtArt(u))
			default:
				err = a.Load(context.Background(), rtArt(u), filepath.Join(t.TempDir(), "got"))
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if errors.Is(err, ErrNotFound) != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", !tt.notFound, tt.notFound)
			}
			if tt.requests >= 0 && f.requests != tt.requests {
				t.Errorf("%d requests, want %d", f.requests, tt.requests)
			}
		})
	}
}

// TestStoreArtifactory: through the one seam, a store built for Argo's
// protocol loads and saves artifactory artifacts, and refuses them when
// the protocol holds only the repository's keys.
func TestStoreArtifactory(t *testing.T) {
	f, base := serveArtifactory(t)
	f.files["/generic/in.txt"] = []byte("input")
	secrets := secretDir(t, map[string]string{"rt/user": "alice", "rt/pass": "s3cret"})
	s, err := NewStoreFor(Env{Credentials: secrets, Log: discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(rtArt(base+"/generic/out.tgz"), true); err != nil {
		t.Fatalf("Check output: %v", err)
	}
	dest := filepath.Join(t.TempDir(), "in")
	if err := s.Load(context.Background(), rtArt(base+"/generic/in.txt"), dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "input" {
		t.Errorf("loaded %q", b)
	}
	if _, err := s.Save(context.Background(), writeFile(t, "out"), rtArt(base+"/generic/out.tgz")); err != nil || string(f.files["/generic/out.tgz"]) != "out" {
		t.Errorf("Save: %v, stored %q", err, f.files["/generic/out.tgz"])
	}
	only, err := NewStoreFor(Env{RepositoryOnly: true, Credentials: StaticKeys{}, Log: discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := only.Check(rtArt(base+"/generic/in.txt"), false); err == nil || !strings.Contains(err.Error(), "no artifactory store is configured") {
		t.Errorf("RepositoryOnly Check = %v", err)
	}
}
