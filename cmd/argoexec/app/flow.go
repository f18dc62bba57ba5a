package app

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/argoexec/argoexec/pkg/version"
)

// flowOptions are what init and wait share: the pod, the backend settings,
// the template, and the logger.
type flowOptions struct {
	commonOptions
	// Log is the logger, with command, pod and backend fields, built by Complete.
	Log *logrus.Entry
}

// complete fills the options from the environment and builds the logger.
func (o *flowOptions) complete(cmdName string, g *globalOptions, stdio IO) error {
	if err := o.commonOptions.complete(cmdName, stdio.Getenv, stdio.NamespaceFile); err != nil {
		return err
	}
	l, err := g.logger(stdio.Err)
	if err != nil {
		return err
	}
	o.Log = l.WithFields(logrus.Fields{"cmd": cmdName, "pod": o.Pod.Namespace + "/" + o.Pod.Name, "executor": o.Backend.Executor, "protocol": o.Protocol.Name()})
	// The first line of every step's log, as Argo's argoexec logs its own.
	o.Log.WithFields(version.Get().Fields()).Info("argoexec " + cmdName)
	return nil
}

// newStepCmd is the cobra command of every step command (init, wait,
// resource, data): complete from the positional arguments, validate, run;
// flags registers the command's own flags.
func newStepCmd(use, short string, args cobra.PositionalArgs, flags func(*pflag.FlagSet),
	complete func(args []string) error, validate func() error, run func() error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(_ *cobra.Command, a []string) error {
			if err := complete(a); err != nil {
				return wrapRun(err)
			}
			if err := validate(); err != nil {
				return wrapRun(err)
			}
			return wrapRun(run())
		},
	}
	flags(cmd.Flags())
	return cmd
}

// newFlowCmd is the cobra command of init or wait, which take no argument.
func newFlowCmd(use, short string, o *flowOptions, complete func() error, validate func() error, run func() error) *cobra.Command {
	return newStepCmd(use, short, cobra.NoArgs, o.addFlags, func([]string) error { return complete() }, validate, run)
}

// WaitOptions are the settings of `argoexec wait`.
type WaitOptions struct {
	flowOptions
	// TerminationLog is wait's terminationMessagePath (IO.TerminationLog):
	// runWait writes errWaitUnfinished there first, so that a wait killed
	// before it finishes leaves a message naming it.
	TerminationLog string
}

// Complete fills the options from the environment.
func (o *WaitOptions) Complete(g *globalOptions, stdio IO) error {
	o.TerminationLog = stdio.TerminationLog
	return o.complete("wait", g, stdio)
}

// Validate checks the options, the backend's settings included, before any work.
func (o *WaitOptions) Validate() error {
	if err := o.validate("wait"); err != nil {
		return err
	}
	return o.validateBackend("wait")
}

func newWaitCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *WaitOptions) error) *cobra.Command {
	o := &WaitOptions{}
	return newFlowCmd("wait", "Wait for the main container, then collect and report its outputs and stop leftover sidecars",
		&o.flowOptions, func() error { return o.Complete(g, stdio) }, o.Validate, func() error { return runF(ctx, o) })
}

// InitOptions are the settings of `argoexec init`.
type InitOptions struct{ flowOptions }

// Complete fills the options from the environment.
func (o *InitOptions) Complete(g *globalOptions, stdio IO) error { return o.complete("init", g, stdio) }

// Validate checks the options before any work; init uses no backend.
func (o *InitOptions) Validate() error { return o.validate("init") }

func newInitCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *InitOptions) error) *cobra.Command {
	o := &InitOptions{}
	return newFlowCmd("init", "Stage the template's inputs (script source, input artifacts) before the main container starts",
		&o.flowOptions, func() error { return o.Complete(g, stdio) }, o.Validate, func() error { return runF(ctx, o) })
}
