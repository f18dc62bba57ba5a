//go:build !argoexec_main

package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MainBinary is the program that runs the main container of resource and
// data templates (`argoexec resource|data`), installed beside argoexec.
// Their libraries cost every wait: expr-lang/expr (data transformations)
// looks methods up by name through reflection, which keeps the linker from
// dropping any method of any type (argoexec grew from 34 to 55 MB and
// wait's peak RSS by 12 MiB), and the dynamic client, discovery, gojq and
// gjson add more. So they live in a binary of their own and argoexec
// replaces itself with it for those two commands.
const MainBinary = "argoexec-main"

// dataRunner and resourceRunner are, in argoexec, what replaces the
// process with MainBinary, same arguments and environment.
func dataRunner() func(context.Context, *DataOptions) error {
	return func(context.Context, *DataOptions) error { return execMain("data") }
}

func resourceRunner() func(context.Context, *ResourceOptions) error {
	return func(context.Context, *ResourceOptions) error { return execMain("resource") }
}

// gitRunner is, in argoexec, what replaces the process with MainBinary:
// init runs artifacts.GitProgram itself, so this is only for a user who
// runs `argoexec artifact-git`.
func gitRunner() func(context.Context, *ArtifactGitOptions) error {
	return func(context.Context, *ArtifactGitOptions) error { return execMain("artifact-git") }
}

// agentRunner is, in argoexec, what replaces the process with MainBinary
// for `argoexec agent init|main`: the agent links expr-lang/expr
// (successCondition) and the dynamic client.
func agentRunner(string) func(context.Context, *AgentOptions) error {
	return func(context.Context, *AgentOptions) error { return execMain("agent") }
}

func execMain(cmd string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("argoexec %s: find argoexec's own path to run %s beside it: %w", cmd, MainBinary, err)
	}
	bin := filepath.Join(filepath.Dir(self), MainBinary)
	if _, err := os.Stat(bin); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("argoexec %s: %s is not installed beside %s: resource and data templates and Argo's agent run in that binary; use an image built by hack/images.sh or the Dockerfile, which ship both", cmd, bin, self)
	}
	args := append([]string{bin}, os.Args[1:]...)
	if err := syscall.Exec(bin, args, os.Environ()); err != nil {
		return fmt.Errorf("argoexec %s: run %s: %w", cmd, bin, err)
	}
	return nil // not reached: Exec replaced the process
}
