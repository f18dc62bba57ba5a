package executor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/archive"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// Init is `argoexec init`: it stages a script template's source where main
// runs it and loads the input artifacts where the pod builder mounts them into
// main. Every step runs; the error joins every failure.
func (we *WorkflowExecutor) Init(ctx context.Context) error {
	var errs stepErrors
	start := time.Now()
	if we.cfg.Template.Script != nil {
		errs.add("stage script", we.stageScript())
	}
	errs.add("load input artifacts", we.loadInputArtifacts(ctx))
	we.log.WithField("elapsed", time.Since(start).Round(time.Millisecond)).Info("init finished")
	return errs.err()
}

// stageScript writes the script's source to the staging directory on the
// shared emptyDir; the pod builder makes main run it.
func (we *WorkflowExecutor) stageScript() error {
	dest := filepath.Join(we.cfg.VarRunArgo, "staging", "script")
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
