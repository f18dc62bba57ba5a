// Package app is workflow-controller's command tree: thin cobra commands
// over options structs that are completed from flags, validated, then run.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
)

// IO is the process's output streams, injected so tests can drive commands.
type IO struct {
	Out, Err io.Writer
}

// Exit codes of workflow-controller, mapped from errors in ExitCode and nowhere else.
const (
	// ExitOK: the command succeeded (for run: the pod Succeeded).
	ExitOK = 0
	// ExitFailed: the pod Failed, or the command could not do its work.
	ExitFailed = 1
	// ExitUsage: bad flags or inputs; nothing was created.
	ExitUsage = 2
	// ExitTimeout: the pod did not finish within --timeout.
	ExitTimeout = 124
	// ExitInterrupted: stopped by SIGTERM or SIGINT.
	ExitInterrupted = 143
)

// UsageError marks errors in flags or input files, found before any work.
type UsageError struct{ Err error }

// Error implements error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// PodFailedError says the step's pod ended in phase Failed.
type PodFailedError struct {
	// Pod is namespace/name of the pod.
	Pod string
	// Reason is the pod's or main's reason and message, if any.
	Reason string
}

// Error implements error.
func (e *PodFailedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("pod %s failed", e.Pod)
	}
	return fmt.Sprintf("pod %s failed: %s", e.Pod, e.Reason)
}

// TimeoutError says the pod did not finish within --timeout.
type TimeoutError struct {
	// Pod is namespace/name of the pod.
	Pod string
	// After is the --timeout that passed.
	After time.Duration
	// Phase is the last phase seen.
	Phase corev1.PodPhase
}

// Error implements error.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("pod %s did not finish within %s (last phase %q); it is left in the cluster for inspection", e.Pod, e.After, e.Phase)
}

// ExitCode maps an error returned by Run to the process's exit code.
func ExitCode(err error) int {
	var (
		usage   *UsageError
		timeout *TimeoutError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &timeout):
		return ExitTimeout
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

// logger builds the one logrus Entry that the commands log through.
func (o *globalOptions) logger(stderr io.Writer) (*logrus.Entry, error) {
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
	return logrus.NewEntry(l).WithField("component", "workflow-controller"), nil
}

// runners hold what each command does once its options are complete; tests
// replace them to check flag parsing apart from behaviour.
type runners struct {
	render func(ctx context.Context, o *RenderOptions, stdio IO, log *logrus.Entry) error
	run    func(ctx context.Context, o *RunOptions, stdio IO, log *logrus.Entry) error
}

// Run parses args (without the program name) and runs the chosen command.
func Run(ctx context.Context, args []string, stdio IO) error {
	return run(ctx, args, stdio, runners{
		render: func(ctx context.Context, o *RenderOptions, stdio IO, log *logrus.Entry) error {
			return o.Run(ctx, stdio.Out)
		},
		run: func(ctx context.Context, o *RunOptions, stdio IO, log *logrus.Entry) error {
			return o.Run(ctx, stdio.Out, log)
		},
	})
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
	fmt.Fprintf(stdio.Err, "workflow-controller: %v\n", err)
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
		Use:           "workflow-controller",
		Short:         "Render and run the pod of one workflow step with the argoexec executor",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().StringVar(&g.LogLevel, "loglevel", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&g.LogFormat, "log-format", "text", "log format: text or json")
	root.AddCommand(newRenderCmd(ctx, g, stdio, r.render), newRunCmd(ctx, g, stdio, r.run))
	return root
}
