package executor

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/archive"
	"github.com/argoexec/argoexec/pkg/artifacts"
	"github.com/sirupsen/logrus"
)

// loadInputArtifacts puts every input artifact at InputArtifacts/NAME.
func (we *WorkflowExecutor) loadInputArtifacts(ctx context.Context) error {
	var errs []error
	for _, a := range we.cfg.Template.Inputs.Artifacts {
		start := time.Now()
		err := we.loadArtifact(ctx, a)
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

func (we *WorkflowExecutor) loadArtifact(ctx context.Context, a wf.Artifact) error {
	dest := filepath.Join(we.cfg.InputArtifacts, a.Name)
	if err := os.MkdirAll(we.cfg.InputArtifacts, 0o755); err != nil {
		return err
	}
	if a.Raw != nil {
		return os.WriteFile(dest, []byte(a.Raw.Data), 0o644)
	}
	// Download next to dest, so the final rename stays on one filesystem.
	tmp, err := os.MkdirTemp(we.cfg.InputArtifacts, ".load-"+a.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "download")
	switch {
	case a.S3 != nil:
		if err := we.checkRepositoryBucket(a); err != nil {
			return err
		}
		if err := we.store.Get(ctx, a.S3.Key, file); err != nil {
			return err
		}
	case a.HTTP != nil:
		if err := downloadHTTP(ctx, a.HTTP, file); err != nil {
			return err
		}
	default:
		return errors.New("no source: set one of s3, http or raw")
	}
	if a.Archive != nil && a.Archive.None != nil {
		return os.Rename(file, dest)
	}
	gz, err := isGzip(file)
	if err != nil || !gz {
		// Not a tarball: the file is the artifact.
		return errors.Join(err, os.Rename(file, dest))
	}
	return unpackTo(ctx, file, tmp, dest)
}

func (we *WorkflowExecutor) checkRepositoryBucket(a wf.Artifact) error {
	if we.store == nil || we.cfg.Repository == nil || we.cfg.Repository.S3 == nil {
		return errors.New("an s3 input artifact needs an artifact repository: set artifactRepository.s3 in the workflow-controller ConfigMap")
	}
	repo := we.cfg.Repository.S3
	if (a.S3.Bucket != "" && a.S3.Bucket != repo.Bucket) || (a.S3.Endpoint != "" && a.S3.Endpoint != repo.Endpoint) {
		return fmt.Errorf("s3://%s/%s at %s is not in the artifact repository (s3://%s at %s): only the repository's bucket is supported, whose credentials init holds",
			a.S3.Bucket, a.S3.Key, a.S3.Endpoint, repo.Bucket, repo.Endpoint)
	}
	return nil
}

// unpackTo extracts the tarball file into a fresh directory and moves the
// result to dest: the single entry itself when the archive holds one (a file
// or a directory, as wait archived it), else the directory of entries.
func unpackTo(ctx context.Context, file, tmp, dest string) error {
	x := filepath.Join(tmp, "x")
	if err := os.Mkdir(x, 0o755); err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	err = archive.Extract(ctx, f, x)
	f.Close()
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(x)
	if err != nil {
		return err
	}
	if len(entries) == 1 {
		return os.Rename(filepath.Join(x, entries[0].Name()), dest)
	}
	return os.Rename(x, dest)
}

func isGzip(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	magic, err := bufio.NewReader(f).Peek(2)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	return err == nil && magic[0] == 0x1f && magic[1] == 0x8b, err
}

func downloadHTTP(ctx context.Context, a *wf.HTTPArtifact, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	for _, h := range a.Headers {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("http: GET %s: %w", a.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("http: GET %s: 404: %w", a.URL, artifacts.ErrNotFound)
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("http: GET %s: %s: %s", a.URL, resp.Status, body)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("http: GET %s: %w", a.URL, err)
	}
	return nil
}

// collectArtifacts archives every output artifact and uploads it.
func (we *WorkflowExecutor) collectArtifacts(ctx context.Context, out *wf.NodeOutputs) error {
	arts := we.cfg.Template.Outputs.Artifacts
	if len(arts) == 0 {
		return nil
	}
	if we.store == nil || we.cfg.Repository == nil || we.cfg.Repository.S3 == nil {
		names := make([]string, len(arts))
		for i, a := range arts {
			names[i] = a.Name
		}
		return fmt.Errorf("output artifacts %s need an artifact repository: set artifactRepository.s3 in the workflow-controller ConfigMap", strings.Join(names, ", "))
	}
	var errs []error
	for _, a := range arts {
		saved, err := we.saveArtifact(ctx, a)
		switch {
		case err == nil:
			out.Artifacts = append(out.Artifacts, *saved)
		case errors.Is(err, ErrOutputMissing) && a.Optional:
			we.log.WithField("artifact", a.Name).Infof("optional artifact: %s does not exist; skipped", a.Path)
		default:
			errs = append(errs, fmt.Errorf("output artifact %q (%s): %w", a.Name, a.Path, err))
		}
	}
	return errors.Join(errs...)
}

func (we *WorkflowExecutor) saveArtifact(ctx context.Context, a wf.Artifact) (*wf.Artifact, error) {
	start := time.Now()
	dir, err := os.MkdirTemp(we.cfg.TempDir, "artifact-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tgz := filepath.Join(dir, a.Name+".tgz")
	if err := we.archiveOutput(ctx, a.Path, tgz, compressionLevel(a)); err != nil {
		return nil, err
	}
	local := tgz
	if a.Archive != nil && a.Archive.None != nil {
		if local, err = singleFile(ctx, tgz, dir); err != nil {
			return nil, fmt.Errorf("archive: none: %w", err)
		}
	}
	repo := we.cfg.Repository.S3
	format := repo.KeyFormat
	if format == "" {
		format = wf.DefaultKeyFormat
	}
	key, err := wf.ExpandKeyFormat(format, map[string]string{
		wf.KeyVarWorkflowName: we.cfg.WorkflowName, wf.KeyVarPodName: we.cfg.PodName,
		wf.KeyVarPodNamespace: we.cfg.PodNamespace, wf.KeyVarTemplateName: we.cfg.Template.Name,
		wf.KeyVarArtifactName: a.Name,
	})
	if err != nil {
		return nil, err
	}
	obj, err := we.store.Put(ctx, key, local)
	if err != nil {
		return nil, err
	}
	we.log.WithFields(map[string]any{"artifact": a.Name, "key": key, "bytes": obj.Size, "sha256": obj.SHA256,
		"elapsed": time.Since(start).Round(time.Millisecond)}).Info("artifact saved")
	saved := a
	saved.S3 = &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: repo.Endpoint, Bucket: repo.Bucket, Region: repo.Region, Insecure: repo.Insecure}, Key: key}
	return &saved, nil
}

func compressionLevel(a wf.Artifact) int {
	if a.Archive != nil && a.Archive.None != nil {
		return gzip.NoCompression // unpacked again before upload
	}
	if a.Archive != nil && a.Archive.Tar != nil && a.Archive.Tar.CompressionLevel != nil {
		return int(*a.Archive.Tar.CompressionLevel)
	}
	return gzip.DefaultCompression
}

// archiveOutput writes main's path p as a .tgz at dest: from the volume
// mirror when p is on one of main's volumes, else through the backend. A
// long one logs its progress (see logGrowth).
func (we *WorkflowExecutor) archiveOutput(ctx context.Context, p, dest string, level int) error {
	stop := logGrowth(we.log.WithField("path", p), dest, we.cfg.ProgressEvery)
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

// singleFile unpacks a .tgz holding exactly one regular file into dir and
// returns its path.
func singleFile(ctx context.Context, tgz, dir string) (string, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return "", err
	}
	defer f.Close()
	xdir := filepath.Join(dir, "x")
	if err := os.Mkdir(xdir, 0o700); err != nil {
		return "", err
	}
	if err := archive.Extract(ctx, f, xdir); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(xdir)
	if err != nil {
		return "", err
	}
	if len(entries) != 1 || !entries[0].Type().IsRegular() {
		return "", errors.New("the path is not a single regular file; remove `archive: none` to store it as a tarball")
	}
	return filepath.Join(xdir, entries[0].Name()), nil
}

// logGrowth logs, every interval until stop is called, how many bytes the
// file at path has and the rate since the start: progress of an archive
// being written, whichever backend writes it, without a hook in the
// ContainerRuntimeExecutor interface. A copy shorter than one interval logs
// nothing; a longer one also logs a final line.
func logGrowth(log *logrus.Entry, path string, interval time.Duration) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	emit := func(state string) {
		st, err := os.Stat(path)
		if err != nil {
			return
		}
		secs := time.Since(start).Seconds()
		log.WithFields(logrus.Fields{"bytes": st.Size(), "MiBps": math.Round(float64(st.Size())/(1<<20)/secs*10) / 10}).
			Infof("archiving output %s", state)
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		logged := false
		for {
			select {
			case <-done:
				if logged {
					emit("finished")
				}
				return
			case <-t.C:
				logged = true
				emit("in progress")
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
