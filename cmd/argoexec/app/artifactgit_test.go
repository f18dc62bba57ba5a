//go:build argoexec_main

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestArtifactGitCommand: `argoexec-main artifact-git` checks the location
// it is given out at --dest; a bad one is a usage error.
func TestArtifactGitCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (hack/deps.sh installs Debian's git)")
	}
	repo := filepath.Join(t.TempDir(), "repo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "one"}, {"-C", repo, "tag", "v1"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(wf.GitArtifact{Repo: repo, Revision: "v1"})
	tests := []struct {
		name     string
		args     []string
		wantErr  string
		wantCode int
	}{
		{name: "checked out", args: []string{"artifact-git", "--artifact", string(spec)}},
		{name: "not JSON", args: []string{"artifact-git", "--artifact", "{"}, wantErr: "--artifact: not a git location", wantCode: ExitUsage},
		{name: "no repo", args: []string{"artifact-git", "--artifact", "{}"}, wantErr: "--artifact with a repo and --dest are required", wantCode: ExitUsage},
		{name: "no such repository", args: []string{"artifact-git", "--artifact", `{"repo":"` + repo + `-gone"}`}, wantErr: "git: clone " + repo + "-gone", wantCode: ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "out")
			var stderr bytes.Buffer
			err := run(context.Background(), append(tt.args, "--dest", dest), IO{Out: &stderr, Err: &stderr, Getenv: func(string) string { return "" }}, runners{git: runArtifactGit})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || ExitCode(err) != tt.wantCode {
					t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, ExitCode(err), tt.wantErr, tt.wantCode)
				}
				if !strings.Contains(stderr.String(), "argoexec: ") {
					t.Errorf("stderr %q: the last line must be the error, which init reports", stderr.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if _, err := os.Stat(filepath.Join(dest, ".git")); err != nil {
				t.Errorf("no checkout at %s: %v", dest, err)
			}
		})
	}
}
