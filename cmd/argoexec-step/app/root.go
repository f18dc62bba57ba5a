// Package app is argoexec-step's command tree: thin cobra commands
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

	"github.com/argoexec/argoexec/pkg/cli"
	"github.com/argoexec/argoexec/pkg/version"
)

// IO is the process's output streams, injected so tests can drive commands.
type IO struct {
	Out, Err io.Writer
}

// Exit codes of argoexec-step, mapped from errors in ExitCode and nowhere else.
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
type UsageError = cli.UsageError

func usageErrorf(format string, args ...any) error { return cli.Usagef(format, args...) }

func wrapRun(err error) error { return cli.RunE(err) }

// runSteps is the RunE of render and run: build the logger, then Complete,
// Validate and run in order; the first error stops them.
func runSteps(g *globalOptions, stdio IO, complete, validate func() error, run func(*logrus.Entry) error) func(*cobra.Command, []string) error {
	return func(*cobra.Command, []string) error {
		log, err := g.logger(stdio.Err)
		if err == nil {
			err = complete()
		}
		if err == nil {
			err = validate()
		}
		if err == nil {
			err = run(log)
		}
		return wrapRun(err)
	}
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
type globalOptions struct{ cli.LogOptions }

// logger builds the one logrus Entry that the commands log through.
func (o *globalOptions) logger(stderr io.Writer) (*logrus.Entry, error) {
	l, err := o.Logger(stderr)
	if err != nil {
		return nil, err
	}
	return logrus.NewEntry(l).WithField("component", "argoexec-step"), nil
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
			return o.Run(ctx, stdio.Out, log)
		},
		run: func(ctx context.Context, o *RunOptions, stdio IO, log *logrus.Entry) error {
			return o.Run(ctx, stdio.Out, log)
		},
	})
}

func run(ctx context.Context, args []string, stdio IO, r runners) error {
	return cli.Execute(newRootCmd(ctx, stdio, r), args, stdio.Out, stdio.Err)
}

func newRootCmd(ctx context.Context, stdio IO, r runners) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "argoexec-step",
		Short:         "Render and run the pod of one workflow step with the argoexec executor",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	g.AddFlags(root.PersistentFlags())
	root.AddCommand(newRenderCmd(ctx, g, stdio, r.render), newRunCmd(ctx, g, stdio, r.run))
	cli.AddVersion(root, stdio.Out, version.Get().String())
	return root
}
