package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// secretMap is Secrets over values by NAME/KEY.
type secretMap map[string]string

func (m secretMap) Secret(field string, sel *corev1.SecretKeySelector) (string, error) {
	v, ok := m[sel.Name+"/"+sel.Key]
	if !ok {
		return "", fmt.Errorf("%s: key %q of secret %q is not mounted", field, sel.Key, sel.Name)
	}
	return v, nil
}

func sel(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

// gitRun runs git in dir and returns its trimmed output.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitServer serves, through Debian's `git http-backend` over net/http/cgi,
// the bare repositories repo.git (main: a="one" then a="two", tag v1 on the
// first commit, branch dev with d, refs/pull/1/head with p, and from the
// second commit on the submodule mod of sub.git, which holds s="sub"),
// sub.git and empty.git, all also under /private/ behind basic auth (u,
// pw). It returns the server's URL and the first commit.
func gitServer(t *testing.T) (string, string) {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed (hack/deps.sh installs Debian's git): no git http-backend to test against")
	}
	root := t.TempDir()
	srv := filepath.Join(root, "srv")
	if err := os.MkdirAll(srv, 0o755); err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + srv, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
	mux := http.NewServeMux()
	mux.Handle("/", backend)
	mux.Handle("/private/", http.StripPrefix("/private", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "pw" {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})))
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)

	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sub := filepath.Join(root, "subwork")
	gitRun(t, root, "init", "-q", "-b", "main", sub)
	write(sub, "s", "sub")
	gitRun(t, sub, "add", "s")
	gitRun(t, sub, "commit", "-qm", "sub")
	gitRun(t, root, "clone", "-q", "--bare", sub, filepath.Join(srv, "sub.git"))

	work := filepath.Join(root, "work")
	gitRun(t, root, "init", "-q", "-b", "main", work)
	write(work, "a", "one")
	gitRun(t, work, "add", "a")
	gitRun(t, work, "commit", "-qm", "one")
	first := gitRun(t, work, "rev-parse", "HEAD")
	gitRun(t, work, "tag", "v1")
	write(work, "a", "two")
	gitRun(t, work, "submodule", "--quiet", "add", s.URL+"/sub.git", "mod")
	gitRun(t, work, "commit", "-qam", "two")
	gitRun(t, work, "checkout", "-qb", "dev")
	write(work, "d", "dev")
	gitRun(t, work, "add", "d")
	gitRun(t, work, "commit", "-qm", "dev")
	gitRun(t, work, "checkout", "-q", "main")
	gitRun(t, work, "checkout", "-qb", "pr")
	write(work, "p", "pull")
	gitRun(t, work, "add", "p")
	gitRun(t, work, "commit", "-qm", "pr")
	gitRun(t, work, "checkout", "-q", "main")
	gitRun(t, root, "clone", "-q", "--bare", work, filepath.Join(srv, "repo.git"))
	gitRun(t, filepath.Join(srv, "repo.git"), "update-ref", "refs/pull/1/head", "pr")
	gitRun(t, filepath.Join(srv, "repo.git"), "branch", "-D", "pr")
	gitRun(t, root, "init", "-q", "--bare", filepath.Join(srv, "empty.git"))
	return s.URL, first
}

func quiet() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

func ptr[T any](v T) *T { return &v }

// TestLoad: a real git server (git http-backend): each of Argo's git
// fields, and the errors, which name the repository and what to check.
func TestLoad(t *testing.T) {
	url, first := gitServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/repo.git"
	l.Close()
	creds := secretMap{"git/user": "u", "git/pass": "pw", "bad/pass": "nope"}
	tests := []struct {
		name     string
		art      wf.GitArtifact
		want     map[string]string // file -> content; "-name" must not exist
		wantErr  string
		wantRepo bool // dest is a repository with origin (the empty repository)
	}{
		{name: "default branch, with its submodule", art: wf.GitArtifact{Repo: url + "/repo.git"}, want: map[string]string{"a": "two", "-d": "", "mod/s": "sub"}},
		{name: "disableSubmodules", art: wf.GitArtifact{Repo: url + "/repo.git", DisableSubmodules: true}, want: map[string]string{"a": "two", "-mod/s": ""}},
		{name: "a branch, its submodule updated", art: wf.GitArtifact{Repo: url + "/repo.git", Revision: "dev"}, want: map[string]string{"d": "dev", "mod/s": "sub"}},
		{name: "tag", art: wf.GitArtifact{Repo: url + "/repo.git", Revision: "v1"}, want: map[string]string{"a": "one"}},
		{name: "commit", art: wf.GitArtifact{Repo: url + "/repo.git", Revision: first}, want: map[string]string{"a": "one"}},
		{name: "abbreviated commit", art: wf.GitArtifact{Repo: url + "/repo.git", Revision: first[:7]}, want: map[string]string{"a": "one"}},
		{name: "branch of origin", art: wf.GitArtifact{Repo: url + "/repo.git", Revision: "dev"}, want: map[string]string{"a": "two", "d": "dev"}},
		{name: "refs/heads/ branch", art: wf.GitArtifact{Repo: url + "/repo.git", Revision: "refs/heads/dev"}, want: map[string]string{"d": "dev"}},
		{name: "depth 1", art: wf.GitArtifact{Repo: url + "/repo.git", Depth: ptr(uint64(1)), DisableSubmodules: true}, want: map[string]string{"a": "two"}},
		{name: "fetch a refspec, then check it out", art: wf.GitArtifact{Repo: url + "/repo.git", Fetch: []string{"+refs/pull/1/head:refs/pull/1/head"}, Revision: "refs/pull/1/head"},
			want: map[string]string{"p": "pull"}},
		{name: "username and password", art: wf.GitArtifact{Repo: url + "/private/repo.git", UsernameSecret: sel("git", "user"), PasswordSecret: sel("git", "pass")},
			want: map[string]string{"a": "two"}},
		{name: "empty repository", art: wf.GitArtifact{Repo: url + "/empty.git"}, wantRepo: true},
		{name: "wrong password", art: wf.GitArtifact{Repo: url + "/private/repo.git", UsernameSecret: sel("git", "user"), PasswordSecret: sel("bad", "pass")},
			wantErr: "git: clone " + url + "/private/repo.git: credentials refused or missing; check the secrets named by usernameSecret and passwordSecret"},
		{name: "no credentials for a private repository", art: wf.GitArtifact{Repo: url + "/private/repo.git"},
			wantErr: "credentials refused or missing"},
		{name: "secret not mounted", art: wf.GitArtifact{Repo: url + "/private/repo.git", UsernameSecret: sel("git", "user"), PasswordSecret: sel("gone", "pass")},
			wantErr: `passwordSecret: key "pass" of secret "gone" is not mounted`},
		{name: "no such repository", art: wf.GitArtifact{Repo: url + "/nope.git"}, wantErr: "the repository does not exist"},
		{name: "no such revision", art: wf.GitArtifact{Repo: url + "/repo.git", Revision: "nope"}, wantErr: `revision "nope" is neither a commit, a tag nor a branch`},
		{name: "unreachable server", art: wf.GitArtifact{Repo: closed}, wantErr: "the git server did not answer; is it up and reachable from the pod"},
		{name: "a key that is not one", art: wf.GitArtifact{Repo: "git@example.invalid:o/r.git", SSHPrivateKeySecret: sel("git", "user")},
			wantErr: `sshPrivateKeySecret: the key in secret "git" is not a private key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "checkout")
			err := Load(context.Background(), &tt.art, creds, dest, quiet())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, body := range tt.want {
				if n, ok := strings.CutPrefix(name, "-"); ok {
					if _, err := os.Stat(filepath.Join(dest, n)); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s exists (%v); it must not at this revision", n, err)
					}
					continue
				}
				if b, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(b) != body {
					t.Errorf("%s = %q, %v; want %q", name, b, err, body)
				}
			}
			if tt.wantRepo {
				if got := gitRun(t, dest, "remote", "get-url", "origin"); got != tt.art.Repo {
					t.Errorf("origin = %q, want %q", got, tt.art.Repo)
				}
			}
		})
	}
}

func TestSSHUser(t *testing.T) {
	for url, want := range map[string]string{
		"git@github.com:argoproj/argo-workflows.git": "git",
		"ssh://deploy@host/repo.git":                 "deploy",
		"https://github.com/argoproj/argo.git":       "git",
	} {
		if got := sshUser(url); got != want {
			t.Errorf("sshUser(%q) = %q, want %q", url, got, want)
		}
	}
}
