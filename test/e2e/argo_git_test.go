//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoexec/argoexec/test/e2e/framework"
)

// argoGitWorkflow: an input git artifact from the repository this test serves (git
// http-backend on the node's IP, which pods reach), at depth 1, with no revision: Argo's own
// argoexec checks a revision out with the git program, which the testbed's image of it lacks.
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
          repo: %s
          depth: 1
    container:
      image: alpine:3.7
      command: [sh, -c]
      args: ["cat /src/hello /src/sub/nested && ls -a /src | tr '\\n' ' '"]
`

// TestArgoGitInput runs a git input under Argo's controller with each executor image that
// ARGOEXEC_E2E_ARGO_IMAGES names, on each backend: the step must succeed and print the
// repository's files, the same with both images.
func TestArgoGitInput(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (hack/deps.sh)")
	}
	ctrls, err := framework.ArgoControllers()
	if err != nil {
		t.Fatal(err)
	}
	repo := serveGitRepo(t, framework.LoadEnv().KubeletHost)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	runLabel := "argo-git-" + hex.EncodeToString(b)
	logs := map[string]map[string]string{} // backend -> controller -> main's log
	for _, c := range ctrls {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		a, err := framework.NewArgo(ctx, c, runLabel)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = a.DeleteRun(ctx)
		})
		for _, backend := range argoBackends() {
			t.Run(backend+"/"+c.Name, func(t *testing.T) {
				wf, err := framework.ParseWorkflow([]byte(fmt.Sprintf(argoGitWorkflow, repo)))
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
				n := mustNode(t, o, "WF", "Succeeded")
				if t.Failed() {
					t.Log(a.Describe(context.Background(), o))
				}
				if !strings.HasPrefix(n.MainLog, "hello from git\nnested\n") || !strings.Contains(n.MainLog, ".git") {
					t.Errorf("main printed %q, want the repository's files and its .git", n.MainLog)
				}
				if logs[backend] == nil {
					logs[backend] = map[string]string{}
				}
				logs[backend][c.Name] = n.MainLog
			})
		}
	}
	for backend, by := range logs {
		if up, ok := by["upstream"]; ok {
			if ours, ok := by["ours"]; ok && ours != up {
				t.Errorf("%s: Argo's own argoexec's step printed %q, ours %q", backend, up, ours)
			}
		}
	}
}

// serveGitRepo serves, with Debian's `git http-backend` over net/http/cgi on host, a
// repository of two commits (hello, sub/nested) for the test's life, and returns its URL.
func serveGitRepo(t *testing.T, host string) string {
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
	gitPath, _ := exec.LookPath("git")
	h := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + srv, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
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
