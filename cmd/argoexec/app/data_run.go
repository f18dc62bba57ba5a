//go:build argoexec_main

package app

import (
	"context"
	"fmt"

	"github.com/argoexec/argoexec/executor/data"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// dataRunner is, in argoexec-main, the data template's own flow.
func dataRunner() func(context.Context, *DataOptions) error { return runData }

// runData is what `argoexec data` does once its options are valid.
func runData(ctx context.Context, o *DataOptions) error {
	tmpl, _, parts, err := o.mainParts()
	if err != nil {
		return err
	}
	s3, err := artifacts.NewS3(artifacts.S3Config{Credentials: parts.DataCredentials}, o.Log)
	if err != nil {
		return err
	}
	d := &data.Executor{Template: tmpl, Repository: parts.DataRepository, Lister: s3, Reporter: parts.Reporter, Log: o.Log}
	if err := d.Run(ctx); err != nil {
		return fmt.Errorf("data template %q: %w", tmpl.Name, err)
	}
	return nil
}
