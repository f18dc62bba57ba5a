package artifacts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// GitProgram is the binary that clones git inputs (`argoexec-main
// artifact-git`, package artifacts/git), installed beside argoexec: go-git
// and its SSH and HTTP transports would grow init and wait, so they are
// linked into argoexec-main alone, as the resource and data flows are.
const GitProgram = "argoexec-main"

// GitCommand is the driver for git inputs: it runs GitProgram's
// artifact-git command for each one, which reads the credentials the
// artifact names from the secret files under SecretsDir.
type GitCommand struct {
	// Program is the cloning binary; empty means GitProgram beside this
	// executable.
	Program string
	// SecretsDir is where the controller mounts the secrets artifacts
	// name (SecretFiles.Root); empty means DefaultSecretRoot.
	SecretsDir string
	// Stderr receives the command's log; nil means os.Stderr (init's log).
	Stderr io.Writer
}

// Load clones the artifact's repository into the new directory localPath
// and checks its revision out. The command's failure is an error with its
// last line, which names the repository and what to check.
func (g GitCommand) Load(ctx context.Context, art wf.Artifact, localPath string) error {
	if art.Git == nil {
		return fmt.Errorf("git: artifact %q has no git location", art.Name)
	}
	prog := g.Program
	if prog == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("git: find argoexec's own path to run %s beside it: %w", GitProgram, err)
		}
		prog = filepath.Join(filepath.Dir(self), GitProgram)
	}
	if _, err := os.Stat(prog); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("git: %s is not installed: git inputs are cloned by it; use an image built by hack/images.sh or the Dockerfile, which ship it beside argoexec", prog)
	}
	spec, err := json.Marshal(art.Git)
	if err != nil {
		return fmt.Errorf("git: artifact %q: %w", art.Name, err)
	}
	root := g.SecretsDir
	if root == "" {
		root = DefaultSecretRoot
	}
	stderr := g.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	last := &lastLine{}
	cmd := exec.CommandContext(ctx, prog, "artifact-git", "--artifact", string(spec), "--dest", localPath, "--secrets-dir", root)
	// One writer for both streams: exec then writes from one goroutine at a time.
	out := io.MultiWriter(stderr, last)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimPrefix(last.String(), "argoexec: "); msg != "" && ctx.Err() == nil {
			return errors.New(msg)
		}
		return fmt.Errorf("git: %s: %s artifact-git: %w", art.Git.Repo, prog, err)
	}
	return nil
}

// Save refuses: git artifacts are inputs only, as in Argo.
func (GitCommand) Save(_ context.Context, _ string, art wf.Artifact) (Object, error) {
	return Object{}, fmt.Errorf("git: artifact %q: %w: git artifacts are inputs only; store outputs in s3", art.Name, ErrNotSupported)
}

// lastLine keeps the last non-empty line written to it.
type lastLine struct {
	buf []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(bytes.TrimRight(l.buf, "\n"), '\n'); i >= 0 {
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

func (l *lastLine) String() string { return strings.TrimSpace(string(l.buf)) }
