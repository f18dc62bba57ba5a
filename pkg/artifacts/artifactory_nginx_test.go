package artifacts

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// nginxConf is a WebDAV server that takes PUT under /generic/ with basic
// authentication, as an Artifactory generic repository does for Argo's
// driver.
const nginxConf = `daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  client_max_body_size 0;
  server {
    listen 127.0.0.1:%[2]d;
    root %[1]s/data;
    location /generic/ {
      auth_basic "artifactory";
      auth_basic_user_file %[1]s/htpasswd;
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
    }
  }
}
`

// startNginx runs Debian's nginx (hack/deps.sh installs nginx-light) on a
// free port of 127.0.0.1 with user:pass allowed, and returns its base URL;
// the test is skipped when nginx is not installed.
func startNginx(t *testing.T, user, pass string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			t.Skip("nginx is not installed (hack/deps.sh installs Debian's nginx-light)")
		}
		bin = "/usr/sbin/nginx"
	}
	dir := t.TempDir()
	// nginx's worker may run as another user (nobody, when the test is root).
	for _, d := range []string{"data", "body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(pass))
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(user+":{SHA}"+base64.StdEncoding.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := filepath.Join(dir, "nginx.conf")
	text := fmt.Sprintf(nginxConf, dir, port)
	if os.Geteuid() == 0 {
		text = "user root;\n" + text // the temporary directory's parents are not open to nobody
	}
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd := exec.Command(bin, "-p", dir, "-c", conf)
	cmd.Stderr = stderr
	// Its own process group, so that its workers are stopped with it; and
	// Wait does not wait on a worker that would hold stderr open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once nginx has exited (waitErr is then its end), so
	// that both the start-up loop and the clean-up can see it.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // nginx's fast shutdown, of the group it leads
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
			return base
		}
		select {
		case <-exited:
			t.Fatalf("nginx exited: %v: %s", waitErr, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx did not answer on %s: %s", base, stderr.String())
		}
	}
}

// lockedBuffer is nginx's stderr, written by exec's copier while the test
// may read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestArtifactoryNginx: against a real WebDAV server (nginx with PUT and
// basic authentication), an output tarball saved as Argo's argoexec saves
// it is loaded back unpacked through the Store, and a missing file, a bad
// password and a server that is gone give the errors that say so.
func TestArtifactoryNginx(t *testing.T) {
	base := startNginx(t, "alice", "s3cret")
	good := secretDir(t, map[string]string{"rt/user": "alice", "rt/pass": "s3cret"})
	bad := secretDir(t, map[string]string{"rt/user": "alice", "rt/pass": "wrong"})
	ctx := context.Background()
	store := func(s SecretFiles, def string) *Store {
		st, err := NewStoreFor(Env{Default: wf.ArtifactLocation{Artifactory: rtArt(def).Artifactory}, Credentials: s, Log: discard()})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	s := store(good, base+"/generic/wf/pod-1")
	archive := filepath.Join(t.TempDir(), "out.tgz")
	if err := os.WriteFile(archive, tgz(t, map[string]string{"hello.txt": "hello nginx"}), 0o644); err != nil {
		t.Fatal(err)
	}
	out := rtArt(base + "/generic/wf/pod-1/out.tgz")
	obj, err := s.Save(ctx, archive, out)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Key != "/generic/wf/pod-1/out.tgz" {
		t.Errorf("saved at %q", obj.Key)
	}
	// Downstream, as Argo's controller passes it: the path alone, relocated
	// onto the consuming step's archiveLocation.
	in := wf.Artifact{Name: "in", Artifactory: &wf.ArtifactoryArtifact{URL: "/generic/wf/pod-1/out.tgz"}}
	dest := filepath.Join(t.TempDir(), "hello.txt")
	if err := store(good, base+"/generic/wf/pod-2").Load(ctx, in, dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "hello nginx" {
		t.Errorf("loaded %q", b)
	}
	tests := []struct {
		name     string
		store    *Store
		art      wf.Artifact
		save     bool
		want     string
		notFound bool
	}{
		{name: "missing file", store: s, art: rtArt(base + "/generic/wf/nope.tgz"), want: "404 Not Found; check the url", notFound: true},
		{name: "bad password", store: store(bad, base), art: out, want: "401 Unauthorized", save: true},
		{name: "bad password on load", store: store(bad, base), art: out, want: "credentials refused: check the secrets named by usernameSecret and passwordSecret"},
		{name: "no PUT outside the repository", store: s, art: rtArt(base + "/elsewhere/x.tgz"), save: true, want: "405 Not Allowed; the server does not take PUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.save {
				_, err = tt.store.Save(ctx, archive, tt.art)
			} else {
				err = tt.store.Load(ctx, tt.art, filepath.Join(t.TempDir(), "x"))
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, ErrNotFound) != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", !tt.notFound, tt.notFound)
			}
		})
	}
}
