package flow

import (
	"context"
	"sort"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// stopSidecars, in legacy sidecar mode, kills every container but main,
// wait and init. The error names the containers that survived.
func (we *WorkflowExecutor) stopSidecars(ctx context.Context) error {
	names, err := we.runtime.ListContainerNames(ctx)
	if err != nil {
		return err
	}
	var sidecars []string
	for _, n := range names {
		if n != wf.MainContainerName && n != wf.WaitContainerName && n != wf.InitContainerName {
			sidecars = append(sidecars, n)
		}
	}
	if len(sidecars) == 0 {
		return nil
	}
	sort.Strings(sidecars)
	we.log.WithField("sidecars", sidecars).Info("stopping sidecars (sidecarMode: legacy)")
	return we.runtime.Kill(ctx, sidecars, we.cfg.KillGrace)
}
