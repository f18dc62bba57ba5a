package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argoexec/argoexec/pkg/version"
)

// versionTemplate is what --version prints: the same line as `argoexec version`.
const versionTemplate = "{{.Name}} {{.Version}}\n"

func newVersionCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this build",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdio.Out, "argoexec", version.Get())
			return wrapRun(err)
		},
	}
}
