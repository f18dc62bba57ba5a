//go:build e2e

package e2e

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
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

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// The WebDAV server the argo tier's artifactory cases store in: Debian's nginx (nginx-light,
// hack/deps.sh) started by the test on the node's IP, which pods reach, taking PUT under
// /generic/ with basic authentication, as an Artifactory generic repository does for Argo's
// driver (pkg/artifacts/artifactory_nginx_test.go runs the same configuration for the unit tier).

// The basic-auth user and password the WebDAV server allows; the Secret argoWebDAVSecret holds
// them in each controller's namespace (argoStoreSecrets).
const (
	argoWebDAVUser     = "argo-e2e"
	argoWebDAVPassword = "webdav-s3cret"
)

// argoWebDAVConf is nginx's configuration: %[1]s its directory, %[2]s the address it listens on.
const argoWebDAVConf = `daemon off;
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
    listen %[2]s;
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

// nginxBinary is Debian's nginx, or "" when it is not installed.
func nginxBinary() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	return ""
}

// argoWebDAV runs nginx as a WebDAV server on a free port of host for the test's life (stopped
// by its cleanup), allowing argoWebDAVUser, and returns its base URL (http://HOST:PORT).
func argoWebDAV(t *testing.T, host string) string {
	t.Helper()
	bin := nginxBinary()
	if bin == "" {
		t.Fatal("nginx is not installed: hack/deps.sh installs Debian's nginx-light")
	}
	dir := t.TempDir()
	// nginx's worker may run as another user (nobody): its directories are open to it.
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
	sum := sha1.Sum([]byte(argoWebDAVPassword))
	htpasswd := argoWebDAVUser + ":{SHA}" + base64.StdEncoding.EncodeToString(sum[:]) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(htpasswd), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on the node's IP %s for the pods to reach: %v", host, err)
	}
	addr := l.Addr().String()
	l.Close() // nginx binds it next: a port another process takes meanwhile fails the start, said below
	text := fmt.Sprintf(argoWebDAVConf, dir, addr)
	if os.Geteuid() == 0 {
		text = "user root;\n" + text // the temporary directory's parents are not open to nobody
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd := exec.Command(bin, "-p", dir, "-c", conf)
	cmd.Stderr = stderr
	// Its own process group, so that its worker stops with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			return base
		}
		select {
		case <-exited:
			t.Fatalf("nginx on %s exited: %v: %s", addr, waitErr, stderr.String())
		case <-ctx.Done():
			t.Fatalf("nginx did not answer on %s: %s", base, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// syncBuffer is a server's stderr, written by exec's copier while the test may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The Secrets the store cases name, made in each controller's namespace by argoStoreSecrets:
// the WebDAV server's user and password, the same user with a wrong password, and S3 keys the
// testbed's S3 does not know.
const (
	argoWebDAVSecret    = "argo-e2e-webdav"
	argoWebDAVBadSecret = "argo-e2e-webdav-bad"
	argoS3BadSecret     = "argo-e2e-s3-bad"
)

// argoStoreSecrets is the setup of the artifactory and oss cases: it makes their Secrets.
func argoStoreSecrets(t *testing.T, a *framework.Argo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, data := range map[string]map[string]string{
		argoWebDAVSecret:    {"user": argoWebDAVUser, "password": argoWebDAVPassword},
		argoWebDAVBadSecret: {"user": argoWebDAVUser, "password": "not-" + argoWebDAVPassword},
		argoS3BadSecret:     {"accesskey": "NOSUCHKEY", "secretkey": "not-a-secret-key"},
	} {
		if err := a.EnsureSecret(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
}
