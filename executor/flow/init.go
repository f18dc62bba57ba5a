package flow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Init is `argoexec init`: it checks that every artifact of the template
// can be moved (ArtifactChecker), then loads the input artifacts where the pod
// builder mounts them into main and, where the protocol says so
// (Protocol.StageScript), stages a script template's source where main runs
// it. Every step runs; the error joins every failure.
func (we *WorkflowExecutor) Init(ctx context.Context) error {
	var errs stepErrors
	start := time.Now()
	// An artifact no store here can move fails init, so main never runs.
	if err := we.checkArtifacts(true); err != nil {
		we.log.Info("init failed: artifacts argoexec cannot move")
		return fmt.Errorf("check artifacts before main runs: %w", err)
	}
	if we.cfg.Template.Script != nil && we.cfg.Protocol.StageScript {
		errs.add("stage script", we.stageScript())
	}
	errs.add("load input artifacts", we.loadInputArtifacts(ctx))
	err := errs.err()
	done := we.log.WithField("elapsed", time.Since(start).Round(time.Millisecond))
	if err != nil {
		done.Info("init failed") // the caller logs the error and writes the termination message
		return err
	}
	done.Info("init finished")
	return nil
}

// stageScript writes the script's source to the staging directory on the
// shared emptyDir; the pod builder makes main run it.
func (we *WorkflowExecutor) stageScript() error {
	dest := we.cfg.Paths.ScriptPath
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	// World-readable: main may run as any user.
	if err := os.WriteFile(dest, []byte(we.cfg.Template.Script.Source), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", dest, err)
	}
	we.log.WithField("bytes", len(we.cfg.Template.Script.Source)).Infof("script staged at %s", dest)
	return nil
}
