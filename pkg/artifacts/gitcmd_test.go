package artifacts

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// fakeProgram writes an executable shell script standing in for
// argoexec-main and returns its path.
func fakeProgram(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), GitProgram)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGitCommand: a git input is cloned by argoexec-main's artifact-git,
// given the location and where the secrets are; a Store moves the
// checkout to its destination; the command's last line is the error.
func TestGitCommand(t *testing.T) {
	art := wf.Artifact{Name: "src", Path: "/src", Git: &wf.GitArtifact{Repo: "https://git.example/r.git", Revision: "v1"}}
	tests := []struct {
		name     string
		script   string
		program  string
		wantErr  string
		wantFile string
		wantArgs string
	}{
		{name: "cloned", script: `echo "$@" > "$ARGS"; dest=; while [ $# -gt 0 ]; do [ "$1" = --dest ] && dest=$2; shift; done; mkdir "$dest" && echo hi > "$dest/README"`,
			wantFile: "hi\n", wantArgs: `artifact-git --artifact {"repo":"https://git.example/r.git","revision":"v1"} --dest `},
		{name: "the command's error", script: `echo 'time="x" level=info msg="git: cloning"' >&2; echo 'argoexec: git: clone https://git.example/r.git: credentials refused or missing; check the secrets' >&2; exit 1`,
			wantErr: "git: clone https://git.example/r.git: credentials refused or missing; check the secrets"},
		{name: "no argoexec-main", program: "/nonexistent/argoexec-main", wantErr: "git: /nonexistent/argoexec-main is not installed: git inputs are cloned by it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := tt.program
			if prog == "" {
				prog = fakeProgram(t, tt.script)
			}
			argsFile := filepath.Join(t.TempDir(), "args")
			t.Setenv("ARGS", argsFile)
			var log bytes.Buffer
			store := NewStore(StoreConfig{Drivers: map[string]Driver{wf.KindGit: GitCommand{Program: prog, SecretsDir: "/s", Stderr: &log}}}, discard())
			if err := store.Check(art, false); err != nil {
				t.Fatalf("Check: %v", err)
			}
			dest := filepath.Join(t.TempDir(), "src")
			err := store.Load(context.Background(), art, dest)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr && !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dest, "README")); err != nil || string(b) != tt.wantFile {
				t.Errorf("README = %q, %v", b, err)
			}
			if b, _ := os.ReadFile(argsFile); !strings.HasPrefix(string(b), tt.wantArgs) || !strings.HasSuffix(strings.TrimSpace(string(b)), "--secrets-dir /s") {
				t.Errorf("args %q, want %q... --secrets-dir /s", b, tt.wantArgs)
			}
		})
	}
	if _, err := (GitCommand{}).Save(context.Background(), "x", art); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Save: %v, want ErrNotSupported", err)
	}
}
