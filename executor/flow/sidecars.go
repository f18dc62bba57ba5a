package flow

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/argoexec/argoexec/executor"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// stopSidecars, in legacy sidecar mode, kills every container but the
// main ones (Template.MainContainerNames: main, or a containerSet's), wait
// and init: those the backend lists and the template's sidecars, started
// or not. The error names the containers that survived; when the
// protocol says survivors are the controller's to stop
// (Protocol.SidecarSurvivorsWarn), a survivor (executor.executor.ErrPID1Survived) is a
// warning that names it, and only other failures are errors.
func (we *WorkflowExecutor) stopSidecars(ctx context.Context) error {
	names, err := we.runtime.ListContainerNames(ctx)
	if err != nil {
		return err
	}
	// The template's sidecars too: a backend that lists what has started
	// (emissary lists its wrappers' directories) misses a sidecar the
	// kubelet starts after main has already exited.
	for _, c := range we.cfg.Template.Sidecars {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	mains := we.cfg.Template.MainContainerNames()
	var sidecars []string
	for _, n := range names {
		if !slices.Contains(mains, n) && n != wf.WaitContainerName && n != wf.InitContainerName {
			sidecars = append(sidecars, n)
		}
	}
	if len(sidecars) == 0 {
		return nil
	}
	sort.Strings(sidecars)
	we.log.WithField("sidecars", sidecars).Info("stopping sidecars (sidecarMode: legacy)")
	err = we.runtime.Kill(ctx, sidecars, we.cfg.Timing.KillGrace)
	if err == nil || !we.cfg.Protocol.SidecarSurvivorsWarn {
		return err
	}
	var rest []error
	for _, e := range joined(err) {
		if errors.Is(e, executor.ErrPID1Survived) {
			we.log.WithError(e).Warn("a sidecar survived its stop; the controller stops it with the pod's workflows.argoproj.io/kill-cmd-<container> annotation, and the step does not fail for it (as Argo's argoexec)")
			continue
		}
		rest = append(rest, e)
	}
	return errors.Join(rest...)
}

// joined returns the errors err joins (errors.Join), or err alone.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
