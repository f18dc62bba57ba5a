package app

import (
	"context"

	"github.com/spf13/cobra"
)

// DataOptions are the settings of `argoexec data`.
type DataOptions struct{ mainOptions }

// Complete fills the options from the environment. The argument Argo's
// controller passes (the data field as JSON) is ignored, as Argo's argoexec
// ignores it: the template comes from the environment.
func (o *DataOptions) Complete(g *globalOptions, stdio IO) error { return o.complete("data", g, stdio) }

// Validate checks the options before any work.
func (o *DataOptions) Validate() error { return o.validate("data") }

func newDataCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *DataOptions) error) *cobra.Command {
	o := &DataOptions{}
	return newStepCmd("data [JSON]", "Run a data template: list its source.artifactPaths (s3, gcs or oss), apply its transformations, report the result", cobra.ArbitraryArgs, o.addFlags,
		func(args []string) error { return o.Complete(g, stdio) }, o.Validate, func() error { return runF(ctx, o) })
}
