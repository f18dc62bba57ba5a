// Package app is argoexec's command tree: thin cobra commands over options
// structs that are completed from flags and environment, validated, then run.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
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
type UsageError struct{ Err error }

// Error implements error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

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
type globalOptions struct {
	LogLevel  string
	LogFormat string
}

func (o *globalOptions) logger(stderr io.Writer) (*logrus.Logger, error) {
	level, err := logrus.ParseLevel(o.LogLevel)
	if err != nil {
		return nil, usageErrorf("--loglevel: %w", err)
	}
	l := logrus.New()
	l.SetOutput(stderr)
	l.SetLevel(level)
	switch o.LogFormat {
	case "text":
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	case "json":
		l.SetFormatter(&logrus.JSONFormatter{})
	default:
		return nil, usageErrorf("--log-format: %q is not a format (want text or json)", o.LogFormat)
	}
	return l, nil
}

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
	root := newRootCmd(ctx, stdio, r)
	root.SetArgs(args)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.Execute()
	if err == nil {
		return nil
	}
	var re *runError
	if errors.As(err, &re) {
		err = re.err
	} else {
		// Not from a command's RunE: cobra rejected the flags or command.
		err = &UsageError{Err: err}
	}
	fmt.Fprintf(stdio.Err, "argoexec: %v\n", err)
	return err
}

// runError carries an error returned by a command's RunE through cobra, so
// that run can tell it from cobra's own flag and command errors.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

func wrapRun(err error) error {
	if err == nil {
		return nil
	}
	return &runError{err: err}
}

func newRootCmd(ctx context.Context, stdio IO, r runners) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "argoexec",
		Short:         "Workflow executor: stages inputs (init) and collects outputs (wait) in a workflow pod",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().StringVar(&g.LogLevel, "loglevel", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&g.LogFormat, "log-format", "text", "log format: text or json")
	root.AddCommand(
		newWaitCmd(ctx, g, stdio, r.wait),
		newInitCmd(ctx, g, stdio, r.init),
		newVersionCmd(stdio),
	)
	return root
}
