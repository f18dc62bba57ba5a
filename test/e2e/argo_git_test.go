//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// argoGitWorkflow: an input git artifact (%[1]s: the repository's URL, %[2]s: more of its git
// fields) at depth 1, with no revision: Argo's own argoexec checks a revision out with the git
// program, which the testbed's image of it lacks.
const argoGitWorkflow = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: git-input-
spec:
  entrypoint: main
  templates:
  - name: main
    inputs:
      artifacts:
      - name: src
        path: /src
        git:
          repo: %[1]s
          depth: 1%[2]s
    container:
      image: alpine:3.7
      command: [sh, -c]
      args: ["cat /src/hello /src/sub/nested && ls -a /src | tr '\\n' ' '"]
`

// argoGitSSHSecret is the Secret, in each controller's namespace, whose key "key" is the
// private key serveGitSSH's sshd accepts.
const argoGitSSHSecret = "argo-e2e-git-ssh"

// gitCase is one git input of TestArgoGitInput.
type gitCase struct {
	name   string
	repo   string // the repository's URL
	fields string // more of the artifact's git fields (YAML lines)
	// wantPhase is the node's phase with our image; Succeeded means main printed the files.
	wantPhase string
	// wantMessage, for a failure, are what our node's message must say.
	wantMessage []string
	// upstreamDiffers: Argo's own argoexec ends this otherwise (the reason): the two images
	// are not compared, and its outcome is logged and, with upstreamMessage, judged.
	upstreamDiffers string
	// upstreamMessage, when set, is what Argo's own argoexec's node, in Error, must say.
	upstreamMessage string
}

// TestArgoGitInput runs git inputs under Argo's controller with each executor image that
// ARGOEXEC_E2E_ARGO_IMAGES names, on each backend, from the repository this test serves on the
// node's IP (which pods reach) over HTTP (git http-backend) and over SSH (Debian's sshd): the
// step must succeed and print the repository's files, the same with both images; with the SSH
// server's host key unknown to the pod and insecureIgnoreHostKey false, ours must fail before
// main runs, saying so and what to set.
func TestArgoGitInput(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (hack/deps.sh)")
	}
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		t.Fatal(err)
	}
	host := framework.LoadEnv().KubeletHost
	srv := buildGitRepo(t)
	sshRepo, sshKey := serveGitSSH(t, host, srv)
	keySecret := fmt.Sprintf("\n          sshPrivateKeySecret: {name: %s, key: key}", argoGitSSHSecret)
	cases := []gitCase{
		{name: "http", repo: serveGitRepo(t, host, srv), wantPhase: "Succeeded"},
		{name: "ssh", repo: sshRepo, fields: keySecret + "\n          insecureIgnoreHostKey: true", wantPhase: "Succeeded"},
		{name: "ssh-unknown-host-key", repo: sshRepo, fields: keySecret, wantPhase: "Error",
			wantMessage:     []string{`input artifact "src"`, "git: clone " + sshRepo, "the server's SSH host key cannot be verified", "set insecureIgnoreHostKey: true"},
			upstreamDiffers: "both fail, each with its own message",
			upstreamMessage: "artifact src failed to load: unable to find any valid known_hosts file, set SSH_KNOWN_HOSTS env variable"},
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	runLabel := "argo-git-" + hex.EncodeToString(b)
	logs := map[string]map[string]string{} // case/backend -> controller -> main's log
	for _, c := range ctrls {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		a, err := framework.NewArgo(ctx, c, runLabel)
		if err == nil {
			err = a.EnsureSecret(ctx, argoGitSSHSecret, map[string]string{"key": sshKey})
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = a.DeleteRun(ctx)
		})
		for _, gc := range cases {
			for _, backend := range argoBackends() {
				t.Run(gc.name+"/"+backend+"/"+c.Name, func(t *testing.T) {
					log, ok := runArgoGit(t, a, gc, backend)
					if !ok {
						return
					}
					k := gc.name + "/" + backend
					if logs[k] == nil {
						logs[k] = map[string]string{}
					}
					logs[k][c.Name] = log
				})
			}
		}
	}
	for k, by := range logs {
		if up, ok := by["upstream"]; ok {
			if ours, ok := by["ours"]; ok && ours != up {
				t.Errorf("%s: Argo's own argoexec's step printed %q, ours %q", k, up, ours)
			}
		}
	}
}

// runArgoGit runs one git case on backend and judges it; it returns main's log and whether the
// run is one to compare between the images.
func runArgoGit(t *testing.T, a *framework.Argo, gc gitCase, backend string) (string, bool) {
	wf, err := framework.ParseWorkflow([]byte(fmt.Sprintf(argoGitWorkflow, gc.repo, gc.fields)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), framework.ArgoTimeout)
	defer cancel()
	created, err := a.Submit(ctx, wf, backend)
	if err != nil {
		t.Fatal(err)
	}
	final, err := a.WaitForWorkflow(ctx, created.GetName())
	if err != nil {
		t.Fatal(err)
	}
	o, err := a.Collect(ctx, final)
	if err != nil {
		t.Error(err)
	}
	defer func() {
		if t.Failed() {
			t.Log(a.Describe(context.Background(), o))
		}
	}()
	n := o.Node("WF")
	if n == nil {
		t.Fatalf("no node in workflow %s", o.Name)
	}
	if gc.upstreamDiffers != "" && a.Controller.Name == "upstream" {
		t.Logf("Argo's own argoexec: workflow %s, node %s: %q; main printed %q (%s)", o.Phase, n.Phase, n.Message, n.MainLog, gc.upstreamDiffers)
		if gc.upstreamMessage != "" && (n.Phase != "Error" || !strings.Contains(n.Message, gc.upstreamMessage)) {
			t.Errorf("Argo's own argoexec: node %s %q, want Error with %q", n.Phase, n.Message, gc.upstreamMessage)
		}
		return "", false
	}
	if n.Phase != gc.wantPhase {
		t.Errorf("node phase %s (%q), want %s", n.Phase, n.Message, gc.wantPhase)
	}
	if gc.wantPhase != "Succeeded" {
		for _, w := range gc.wantMessage {
			if !strings.Contains(n.Message, w) {
				t.Errorf("node message %q has no %q", n.Message, w)
			}
		}
		if n.MainLog != "" {
			t.Errorf("main ran and printed %q; want the step stopped in init", n.MainLog)
		}
		t.Logf("ours: node %s: %q", n.Phase, n.Message)
		return "", false
	}
	if !strings.HasPrefix(n.MainLog, "hello from git\nnested\n") || !strings.Contains(n.MainLog, ".git") {
		t.Errorf("main printed %q, want the repository's files and its .git", n.MainLog)
	}
	return n.MainLog, gc.upstreamDiffers == ""
}

// buildGitRepo makes a repository of two commits (hello, sub/nested) and returns the directory
// that holds its bare clone, repo.git, for the servers to serve.
func buildGitRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(root, "init", "-q", "-b", "main", work)
	if err := os.MkdirAll(filepath.Join(work, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"hello": "an older hello\n", "sub/nested": "nested\n"} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(work, "add", ".")
	run(work, "commit", "-qm", "one")
	if err := os.WriteFile(filepath.Join(work, "hello"), []byte("hello from git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(work, "commit", "-qam", "two")
	srv := filepath.Join(root, "srv")
	run(root, "clone", "-q", "--bare", work, filepath.Join(srv, "repo.git"))
	return srv
}

// serveGitRepo serves srv's repo.git (buildGitRepo) with Debian's `git http-backend` over
// net/http/cgi on host for the test's life, and returns its URL.
func serveGitRepo(t *testing.T, host, srv string) string {
	t.Helper()
	gitPath, _ := exec.LookPath("git")
	h := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + srv, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + t.TempDir()}}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on the node's IP %s for the pods to reach: %v", host, err)
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	var served sync.WaitGroup
	served.Go(func() { _ = s.Serve(l) })
	t.Cleanup(func() {
		_ = s.Close()
		served.Wait()
	})
	return "http://" + l.Addr().String() + "/repo.git"
}

// argoSSHDConf is sshd's configuration: %[1]s its directory, %[2]s the address it listens on,
// %[3]s the one user it lets in, by the key in its authorized_keys alone.
const argoSSHDConf = `ListenAddress %[2]s
HostKey %[1]s/host_key
PidFile %[1]s/sshd.pid
AuthorizedKeysFile %[1]s/authorized_keys
AllowUsers %[3]s
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel VERBOSE
`

// serveGitSSH runs Debian's sshd (openssh-server, hack/deps.sh) on a free port of host for the
// test's life, with a host key and a user key made for the test, serving srv's repo.git
// (buildGitRepo). The key lets in the test's own user for git's commands alone (git-shell, no
// pty or forwarding). It returns the repository's ssh:// URL and the user key's private key.
func serveGitSSH(t *testing.T, host, srv string) (repo, privateKey string) {
	t.Helper()
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		t.Fatalf("sshd is not installed: hack/deps.sh installs Debian's openssh-server: %v", err)
	}
	gitShell, err := exec.LookPath("git-shell")
	if err != nil {
		t.Fatalf("git-shell (Debian's git): %v", err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, k := range []string{"host_key", "user_key"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "argoexec-e2e-"+k, "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %s: %v: %s", k, err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dir, "user_key"))
	if err != nil {
		t.Fatal(err)
	}
	auth := fmt.Sprintf("restrict,command=\"%s -c \\\"$SSH_ORIGINAL_COMMAND\\\"\" %s", gitShell, pub)
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on the node's IP %s for the pods to reach: %v", host, err)
	}
	addr := l.Addr().String()
	l.Close() // sshd binds it next: a port another process takes meanwhile fails the start, said below
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(argoSSHDConf, dir, addr, me.Username)), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd, run as root, wants its privilege separation directory (Debian's package makes it
	// only when its service starts).
	if os.Geteuid() == 0 {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stderr := &syncBuffer{}
	cmd := exec.Command(sshd, "-D", "-e", "-f", conf)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sessions stop with it
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
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
		if t.Failed() {
			t.Logf("sshd's log:\n%s", stderr.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if banner, err := sshBanner(ctx, addr); err == nil && strings.HasPrefix(banner, "SSH-2.0-") {
			break
		}
		select {
		case <-exited:
			t.Fatalf("sshd on %s exited: %v: %s", addr, waitErr, stderr.String())
		case <-ctx.Done():
			t.Fatalf("sshd did not answer on %s: %s", addr, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return "ssh://" + me.Username + "@" + addr + filepath.Join(srv, "repo.git"), string(key)
}

// sshBanner is the first line an SSH server at addr sends.
func sshBanner(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	return bufio.NewReader(c).ReadString('\n')
}
