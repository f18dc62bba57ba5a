//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The basic-authentication account startWebDAV's server takes; a test puts
// them in a Secret for the artifact's usernameSecret and passwordSecret.
const (
	webdavUser     = "argoexec"
	webdavPassword = "webdav-e2e-password"
)

// webdavConf is a WebDAV server that takes PUT under /generic/ with basic
// authentication, as an Artifactory generic repository does for Argo's
// artifactory driver: %[1]s is the server's directory, %[2]s the address it
// listens on.
const webdavConf = `daemon off;
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

// startWebDAV runs Debian's nginx (hack/deps.sh installs nginx-light) as a
// WebDAV server on a free port of host (the node's IP, which pods reach)
// for the test's life, taking webdavUser:webdavPassword under /generic/,
// and returns its base URL (http://HOST:PORT; artifacts go under
// /generic/). The test is skipped when nginx is not installed, and fails
// when nginx does not answer within 30 s, with nginx's own log.
func startWebDAV(t *testing.T, host string) (url string) {
	t.Helper()
	bin := nginxBinary()
	if bin == "" {
		t.Skip("nginx is not installed (hack/deps.sh installs Debian's nginx-light)")
	}
	dir, err := os.MkdirTemp("", "webdav-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// nginx's worker may run as another user (nobody, unless the test is root).
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
	sum := sha1.Sum([]byte(webdavPassword))
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(webdavUser+":{SHA}"+base64.StdEncoding.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on the node's IP %s for the pods to reach: %v", host, err)
	}
	addr := l.Addr().String()
	l.Close()
	text := fmt.Sprintf(webdavConf, dir, addr)
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
	// Its own process group, so that its workers stop with it; WaitDelay so
	// that Wait does not wait on a worker holding stderr open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
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
	base := "http://" + addr
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(base + "/")
		if err == nil {
			resp.Body.Close()
			return base
		}
		select {
		case <-exited:
			t.Fatalf("nginx exited before answering on %s: %v: %s", base, waitErr, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx did not answer on %s within 30 s: %v: %s", base, err, stderr.String())
		}
	}
}

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

// syncBuffer is a child's stderr, written by exec's copier while the test
// may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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
