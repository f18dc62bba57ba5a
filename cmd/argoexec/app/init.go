package app

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

// InitOptions are the settings of `argoexec init`.
type InitOptions struct {
	commonOptions
	// Log is the logger, with pod fields, built by Complete.
	Log *logrus.Entry
}

// Complete fills the options from the environment.
func (o *InitOptions) Complete(g *globalOptions, stdio IO) error {
	if err := o.complete("init", stdio.Getenv); err != nil {
		return err
	}
	l, err := g.logger(stdio.Err)
	if err != nil {
		return err
	}
	o.Log = l.WithFields(logrus.Fields{"cmd": "init", "pod": o.Pod.Namespace + "/" + o.Pod.Name})
	return nil
}

// Validate checks the options before any work.
func (o *InitOptions) Validate() error { return o.validate("init") }

func newInitCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *InitOptions) error) *cobra.Command {
	o := &InitOptions{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Stage the template's inputs (script source, input artifacts) before the main container starts",
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
