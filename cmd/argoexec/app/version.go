package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argoexec/argoexec/pkg/version"
)

func newVersionCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this build",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdio.Out, "argoexec", version.String())
			return wrapRun(err)
		},
	}
}
