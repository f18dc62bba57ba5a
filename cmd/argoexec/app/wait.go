package app

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

// WaitOptions are the settings of `argoexec wait`.
type WaitOptions struct {
	commonOptions
	// Log is the logger, with pod and backend fields, built by Complete.
	Log *logrus.Entry
}

// Complete fills the options from the environment.
func (o *WaitOptions) Complete(g *globalOptions, stdio IO) error {
	if err := o.complete("wait", stdio.Getenv); err != nil {
		return err
	}
	l, err := g.logger(stdio.Err)
	if err != nil {
		return err
	}
	o.Log = l.WithFields(logrus.Fields{"cmd": "wait", "pod": o.Pod.Namespace + "/" + o.Pod.Name, "executor": o.Backend.Executor})
	return nil
}

// Validate checks the options before any work.
func (o *WaitOptions) Validate() error {
	if err := o.validate("wait"); err != nil {
		return err
	}
	return o.validateBackend("wait")
}

func newWaitCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *WaitOptions) error) *cobra.Command {
	o := &WaitOptions{}
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Wait for the main container, then collect and report its outputs and stop leftover sidecars",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.Complete(g, stdio); err != nil {
				return wrapRun(err)
			}
			if err := o.Validate(); err != nil {
				return wrapRun(err)
			}
			return wrapRun(runF(ctx, o))
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}
