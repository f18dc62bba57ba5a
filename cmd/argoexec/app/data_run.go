//go:build argoexec_main

package app

import (
	"context"
	"fmt"

	"github.com/argoexec/argoexec/executor/data"
)

// dataRunner is, in argoexec-main, the data template's own flow.
func dataRunner() func(context.Context, *DataOptions) error { return runData }

// runData is what `argoexec data` does once its options are valid.
func runData(ctx context.Context, o *DataOptions) error {
	tmpl, _, parts, err := o.mainParts()
	if err != nil {
		return err
	}
	if parts.DataEnv == nil {
		return fmt.Errorf("data template %q: the %s protocol gives data templates no artifact stores", tmpl.Name, o.Protocol.Name())
	}
	lister := data.KindLister{Env: parts.DataEnv, Allow: parts.DataAllow}
	d := &data.Executor{Template: tmpl, Repository: parts.DataRepository, Lister: lister, Reporter: parts.Reporter, Log: o.Log}
	if err := d.Run(ctx); err != nil {
		return fmt.Errorf("data template %q: %w", tmpl.Name, err)
	}
	return nil
}
