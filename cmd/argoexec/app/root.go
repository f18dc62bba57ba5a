// Package app is argoexec's command tree: thin cobra commands over options
// structs that are completed from flags and environment, validated, then run.
package app

import (
	"context"
	"errors"
	"io"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/argoexec/argoexec/pkg/cli"
)

// IO is the process's environment as the commands see it, injected so that
// tests can drive them without touching the real process.
type IO struct {
	Out, Err io.Writer
	// Getenv reads an environment variable (os.Getenv in main).
	Getenv func(string) string
}

// Exit codes of argoexec, mapped from errors in ExitCode and nowhere else.
const (
	// ExitOK: everything that was asked succeeded.
	ExitOK = 0
	// ExitFailed: a step failed (the error says which).
	ExitFailed = 1
	// ExitUsage: bad flags or environment; nothing was done.
	ExitUsage = 2
	// ExitInterrupted: stopped by SIGTERM or SIGINT.
	ExitInterrupted = 143
)

// UsageError marks errors in flags or environment, found before any work.
type UsageError = cli.UsageError

func usageErrorf(format string, args ...any) error { return cli.Usagef(format, args...) }

func wrapRun(err error) error { return cli.RunE(err) }

// ExitCode maps an error returned by Run to the process's exit code.
func ExitCode(err error) int {
	var usage *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	default:
		return ExitFailed
	}
}

// globalOptions are the flags every command takes.
type globalOptions struct{ cli.LogOptions }

func (o *globalOptions) logger(stderr io.Writer) (*logrus.Logger, error) { return o.Logger(stderr) }

// runners holds what each command does once its options are complete; tests
// replace them to check parsing apart from behaviour.
type runners struct {
	wait func(ctx context.Context, o *WaitOptions) error
	init func(ctx context.Context, o *InitOptions) error
}

// Run parses args (without the program name) and runs the chosen command.
func Run(ctx context.Context, args []string, stdio IO) error {
	return run(ctx, args, stdio, runners{wait: runWait, init: runInit})
}

func run(ctx context.Context, args []string, stdio IO, r runners) error {
	return cli.Execute(newRootCmd(ctx, stdio, r), args, stdio.Out, stdio.Err)
}

func newRootCmd(ctx context.Context, stdio IO, r runners) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "argoexec",
		Short:         "Workflow executor: stages inputs (init) and collects outputs (wait) in a workflow pod",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	g.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newWaitCmd(ctx, g, stdio, r.wait),
		newInitCmd(ctx, g, stdio, r.init),
		newVersionCmd(stdio),
	)
	return root
}
