package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// collectParameters reads every output parameter with valueFrom.path, from
// the volume mirror when the path is on one of main's volumes, else through
// the backend. A missing file takes the default; without one it fails.
func (we *WorkflowExecutor) collectParameters(ctx context.Context, out *wf.NodeOutputs) error {
	var errs []error
	for _, p := range we.cfg.Template.Outputs.Parameters {
		p := p
		if p.ValueFrom == nil || p.ValueFrom.Path == "" {
			if p.Value == nil && p.Default != nil {
				p.Value = p.Default
			}
			out.Parameters = append(out.Parameters, p)
			continue
		}
		val, err := we.readParameter(ctx, p.ValueFrom.Path)
		switch {
		case err == nil:
			p.Value = wf.AnyStringPtr(strings.TrimSuffix(val, "\n"))
		case errors.Is(err, ErrOutputMissing) && p.Default != nil:
			we.log.WithField("parameter", p.Name).Infof("%s does not exist: using the default", p.ValueFrom.Path)
			p.Value = p.Default
		case errors.Is(err, ErrOutputMissing):
			errs = append(errs, fmt.Errorf("output parameter %q: %s does not exist in container main and the parameter has no default", p.Name, p.ValueFrom.Path))
			continue
		default:
			errs = append(errs, fmt.Errorf("output parameter %q: read %s: %w", p.Name, p.ValueFrom.Path, err))
			continue
		}
		p.ValueFrom = &wf.ValueFrom{Path: p.ValueFrom.Path}
		out.Parameters = append(out.Parameters, p)
	}
	return errors.Join(errs...)
}

func (we *WorkflowExecutor) readParameter(ctx context.Context, p string) (string, error) {
	root, rel, ok := we.onVolume(p)
	if !ok {
		s, err := we.runtime.GetFileContents(ctx, wf.MainContainerName, p)
		if err != nil && isNotExist(err) {
			return "", fmt.Errorf("%w: %w", ErrOutputMissing, err)
		}
		return s, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	f, err := r.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %w", ErrOutputMissing, err)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return "", fmt.Errorf("%s is a directory; an output parameter must be a file (use an output artifact for directories)", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, wf.MaxFileBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > wf.MaxFileBytes {
		return "", fmt.Errorf("%s is larger than %d bytes, more than the outputs annotation can hold; declare it as an output artifact", p, wf.MaxFileBytes)
	}
	return string(b), nil
}

// isNotExist recognises a backend's "no such file" error. Backends wrap
// fs.ErrNotExist for a missing path.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist)
}
