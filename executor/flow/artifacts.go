package flow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/archive"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// ArtifactDriver loads and saves artifacts wherever their location says
// (pkg/artifacts.Store implements it): the flows hold no driver of their own.
type ArtifactDriver interface {
	// Load puts the artifact at dest, unpacked (see artifacts.Store.Load);
	// a missing one is an error wrapping artifacts.ErrNotFound.
	Load(ctx context.Context, art wf.Artifact, dest string) error
	// Save stores the local file localPath at the artifact's location.
	Save(ctx context.Context, localPath string, art wf.Artifact) (artifacts.Object, error)
}

// ArtifactChecker is implemented by an ArtifactDriver that can tell, before
// any transfer, that it cannot move an artifact: a kind of store argoexec
// does not implement, one the controller configured none of, an output to
// a location that only loads (artifacts.Store implements it).
type ArtifactChecker interface {
	// Check says why art cannot be moved as an input (output false) or an
	// output; nil when it can be tried.
	Check(art wf.Artifact, output bool) error
}

// checkArtifacts asks the store, before any transfer, whether it can move
// the template's output artifacts and, with inputs, its input artifacts.
// The error names every artifact it cannot move.
func (we *WorkflowExecutor) checkArtifacts(inputs bool) error {
	c, ok := we.artifactDriver().(ArtifactChecker)
	if !ok {
		return nil
	}
	var errs []error
	if inputs {
		for _, a := range we.cfg.Template.Inputs.Artifacts {
			if err := c.Check(a, false); err != nil {
				errs = append(errs, fmt.Errorf("input %w", err))
			}
		}
	}
	for _, a := range we.cfg.Template.Outputs.Artifacts {
		if err := c.Check(a, true); err != nil {
			errs = append(errs, fmt.Errorf("output %w", err))
			continue
		}
		// Where the protocol would put it: a repository of a kind no store
		// here saves to (Argo's archiveLocation in hdfs, say) is refused
		// now, not once main has done its work. A missing repository is
		// left to wait, which names every artifact that needed it.
		if err := we.checkLocated(c, a); err != nil {
			errs = append(errs, fmt.Errorf("output %w", err))
		}
	}
	if we.cfg.Protocol.ArchiveLogs {
		if err := we.checkLocated(c, logArtifact()); err != nil {
			errs = append(errs, fmt.Errorf("main's log (archiveLogs): %w", err))
		}
	}
	return errors.Join(errs...)
}

// checkLocated checks the output a where the protocol's locator puts it;
// nil with no locator or no repository (wait names those). Its errors
// start with the artifact's name.
func (we *WorkflowExecutor) checkLocated(c ArtifactChecker, a wf.Artifact) error {
	l := we.cfg.Protocol.Artifacts
	if l == nil {
		return nil
	}
	upload, _, err := l.Locate(a, we.keyVars())
	switch {
	case errors.Is(err, artifacts.ErrNotSupported):
		return fmt.Errorf("artifact %q: %w", a.Name, err)
	case err != nil:
		return nil
	}
	kind := upload.Location().Kind()
	if kind == a.Location().Kind() {
		return nil // not moved: checked as it is
	}
	if err := c.Check(upload, true); err != nil {
		return fmt.Errorf("%w (the controller's repository for it is %s)", err, kind)
	}
	return nil
}

// keyVars are what this pod's artifact keys are made of.
func (we *WorkflowExecutor) keyVars() KeyVars {
	return KeyVars{WorkflowName: we.cfg.Step.Workflow, PodName: we.cfg.Step.Pod,
		PodNamespace: we.cfg.Step.Namespace, TemplateName: we.cfg.Template.Name}
}

// artifactDriver is the flows' driver: the one cmd/ built for the
// protocol, else one for raw and http inputs only (no repository).
func (we *WorkflowExecutor) artifactDriver() ArtifactDriver {
	if we.store != nil {
		return we.store
	}
	return artifacts.NewStore(artifacts.StoreConfig{}, we.log)
}

// loadInputArtifacts puts every input artifact where main finds it.
func (we *WorkflowExecutor) loadInputArtifacts(ctx context.Context) error {
	arts := we.cfg.Template.Inputs.Artifacts
	if len(arts) == 0 {
		return nil
	}
	d := we.artifactDriver()
	var errs []error
	for _, a := range arts {
		start := time.Now()
		err := we.loadArtifact(ctx, d, a)
		switch {
		case err == nil:
			we.log.WithFields(map[string]any{"artifact": a.Name, "path": a.Path, "elapsed": time.Since(start).Round(time.Millisecond)}).Info("input artifact loaded")
		case errors.Is(err, artifacts.ErrNotFound) && a.Optional:
			we.log.WithField("artifact", a.Name).Info("optional input artifact does not exist; skipped")
		default:
			errs = append(errs, fmt.Errorf("input artifact %q: %w", a.Name, err))
		}
	}
	return errors.Join(errs...)
}

// loadArtifact puts a at InputArtifacts/NAME, or, when the protocol says
// so and a's path is on one of main's volumes, at that path through the
// volume's mirror. Files are created 0644 (directories 0755, an archive's
// entries keep theirs), so main can read them whatever user it runs as;
// a.Mode, when set, is then applied as Argo v3.3.8's argoexec applies it:
// to the loaded path, and with a.RecurseMode to everything under it.
// (Argo's own S3 loads come out 0600, as minio-go creates its download
// file, which a main running as another user than init cannot read.)
func (we *WorkflowExecutor) loadArtifact(ctx context.Context, d ArtifactDriver, a wf.Artifact) error {
	dest := filepath.Join(we.cfg.Paths.InputArtifacts, a.Name)
	if we.cfg.Protocol.InputsOnVolumes {
		if root, rel, ok := we.onVolume(a.Path); ok {
			dest = filepath.Join(root, rel)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	if err := d.Load(ctx, a, dest); err != nil || a.Mode == nil {
		return err
	}
	mode := os.FileMode(*a.Mode) & os.ModePerm
	if !a.RecurseMode {
		if err := os.Chmod(dest, mode); err != nil {
			return fmt.Errorf("set mode %04o on %s: %w", mode, a.Path, err)
		}
		return nil
	}
	err := filepath.WalkDir(dest, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		return fmt.Errorf("set mode %04o under %s (recurseMode): %w", mode, a.Path, err)
	}
	return nil
}

// collectArtifacts archives every output artifact and uploads it where
// the protocol's ArtifactLocator says.
func (we *WorkflowExecutor) collectArtifacts(ctx context.Context, out *wf.NodeOutputs) error {
	arts := we.cfg.Template.Outputs.Artifacts
	if len(arts) == 0 {
		return nil
	}
	d := we.artifactDriver()
	var errs, missingRepo []error
	for _, a := range arts {
		saved, err := we.saveArtifact(ctx, d, a)
		switch {
		case err == nil:
			out.Artifacts = append(out.Artifacts, *saved)
		case errors.Is(err, ErrOutputMissing) && a.Optional:
			we.log.WithField("artifact", a.Name).Infof("optional artifact: %s does not exist; skipped", a.Path)
		case errors.Is(err, ErrNoRepository):
			missingRepo = append(missingRepo, err)
		default:
			errs = append(errs, fmt.Errorf("output artifact %q (%s): %w", a.Name, a.Path, err))
		}
	}
	if len(missingRepo) > 0 {
		names := make([]string, len(missingRepo))
		for i, err := range missingRepo {
			names[i] = strings.TrimSuffix(err.Error(), ": "+ErrNoRepository.Error())
		}
		errs = append(errs, fmt.Errorf("output artifacts %s need an artifact repository: %s", strings.Join(names, ", "), we.noRepositoryHint()))
	}
	return errors.Join(errs...)
}

// noRepositoryHint says where the repository is configured, as the
// protocol's locator says.
func (we *WorkflowExecutor) noRepositoryHint() string {
	if l := we.cfg.Protocol.Artifacts; l != nil {
		return l.NoRepositoryHint()
	}
	return "the controller that built the pod passed no artifact repository"
}

func (we *WorkflowExecutor) saveArtifact(ctx context.Context, d ArtifactDriver, a wf.Artifact) (*wf.Artifact, error) {
	start := time.Now()
	l := we.cfg.Protocol.Artifacts
	if l == nil {
		return nil, fmt.Errorf("%s: %w", a.Name, ErrNoRepository)
	}
	upload, reported, err := l.Locate(a, we.keyVars())
	if errors.Is(err, ErrNoRepository) {
		return nil, fmt.Errorf("%s: %w", a.Name, err)
	}
	if err != nil {
		return nil, err
	}
	if we.store == nil {
		return nil, fmt.Errorf("%s: %w", a.Name, ErrNoRepository)
	}
	dir, err := os.MkdirTemp(we.cfg.Paths.TempDir, "artifact-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tgz := filepath.Join(dir, a.Name+".tgz")
	if err := we.archiveOutput(ctx, a.Path, tgz, artifacts.CompressionLevel(a)); err != nil {
		return nil, err
	}
	local := tgz
	if a.Archive != nil && a.Archive.None != nil {
		if local, err = artifacts.Unarchived(ctx, tgz, dir); err != nil {
			return nil, err
		}
	}
	obj, err := d.Save(ctx, local, upload)
	if err != nil {
		return nil, err
	}
	we.log.WithFields(map[string]any{"artifact": a.Name, "key": obj.Key, "bytes": obj.Size, "sha256": obj.SHA256, "objects": obj.Files,
		"elapsed": time.Since(start).Round(time.Millisecond)}).Info("artifact saved")
	return &reported, nil
}

// archiveOutput writes main's path p as a .tgz at dest: from the volume
// mirror when p is on one of main's volumes, else through the backend. A
// long one logs its progress, sampling the size of dest as it grows (there
// is no hook in the ContainerRuntimeExecutor interface, and none is needed).
func (we *WorkflowExecutor) archiveOutput(ctx context.Context, p, dest string, level int) error {
	prog := artifacts.ProgressConfig{Every: we.cfg.Timing.ProgressEvery, Clock: we.cfg.Clock}.Start(we.log.WithField("path", p), "archiving output", 0)
	stop := prog.Poll(func() (int64, error) {
		st, err := os.Stat(dest)
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	})
	defer stop()
	root, rel, ok := we.onVolume(p)
	if !ok {
		err := we.runtime.CopyFile(ctx, wf.MainContainerName, p, dest, level)
		if err != nil && isNotExist(err) {
			return fmt.Errorf("%w: %w", ErrOutputMissing, err)
		}
		return err
	}
	f, err := os.Create(dest)
	if err != nil {
		return err
	}
	err = archive.Create(ctx, root, rel, f, level)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrOutputMissing, err)
	}
	return err
}
