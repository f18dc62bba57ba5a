package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// saveLogs uploads main's combined log as Argo v3.3.8's argoexec does for
// archiveLogs (SaveLogs): the whole log, as the backend reads it, stored as
// main.log where the protocol's locator puts the artifact main-logs (under
// Argo's controller, ARCHIVE-KEY/main.log), and returned as the report
// names it: its name and location alone.
func (we *WorkflowExecutor) saveLogs(ctx context.Context) (*wf.Artifact, error) {
	start := time.Now()
	l := we.cfg.Protocol.Artifacts
	if l == nil || we.store == nil {
		return nil, fmt.Errorf("%s: %w: %s", wf.MainLogsArtifactName, ErrNoRepository, we.noRepositoryHint())
	}
	upload, located, err := l.Locate(logArtifact(), we.keyVars())
	if errors.Is(err, ErrNoRepository) {
		return nil, fmt.Errorf("%s: %w: %s", wf.MainLogsArtifactName, err, we.noRepositoryHint())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wf.MainLogsArtifactName, err)
	}
	dir, err := os.MkdirTemp(we.cfg.Paths.TempDir, "logs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, wf.MainLogFileName)
	if err := we.mainLogTo(ctx, file); err != nil {
		return nil, err
	}
	obj, err := we.artifactDriver().Save(ctx, file, upload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wf.MainLogsArtifactName, err)
	}
	we.log.WithFields(map[string]any{"artifact": wf.MainLogsArtifactName, "key": obj.Key, "bytes": obj.Size, "sha256": obj.SHA256,
		"elapsed": time.Since(start).Round(time.Millisecond)}).Info("main's log saved (archiveLogs)")
	reported := wf.Artifact{Name: wf.MainLogsArtifactName}
	reported.SetLocation(located.Location())
	return &reported, nil
}

// logArtifact is main's log as an output for the locator: `archive: none`
// with main.log as its path, so that it is stored under the file's own
// name, as Argo's argoexec names it.
func logArtifact() wf.Artifact {
	return wf.Artifact{Name: wf.MainLogsArtifactName, Path: wf.MainLogFileName, Archive: &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}}
}

// mainLogTo writes main's combined log to the new file path, once the log
// has stopped growing (readSettledLog); one still growing then is saved as
// read, with a warning.
func (we *WorkflowExecutor) mainLogTo(ctx context.Context, path string) error {
	growing, err := we.readSettledLog(ctx, "the archived log", func() error { return we.readLogTo(ctx, path) })
	if growing != "" {
		we.log.Warn(growing)
	}
	return err
}

// readLogTo writes main's combined log, as read now, to the file path.
func (we *WorkflowExecutor) readLogTo(ctx context.Context, path string) error {
	rc, err := we.runtime.GetOutputStream(ctx, wf.MainContainerName, true)
	if err != nil {
		return fmt.Errorf("read main's log: %w", err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read main's log into %s: %w", path, err)
	}
	return nil
}
