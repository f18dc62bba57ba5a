package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// collectParameters reads every output parameter with valueFrom.path, from
// the volume mirror when the path is on one of main's volumes, else through
// the backend, with one trailing newline stripped. A missing file takes the
// default (valueFrom.default, or default); without one it fails. Content
// the report's JSON cannot carry (bytes that are not UTF-8) is an error,
// never replaced. Each parameter is echoed as the template declares it
// (globalName, valueFrom ...) with its value filled in.
func (we *WorkflowExecutor) collectParameters(ctx context.Context, out *wf.NodeOutputs) error {
	var errs []error
	for _, p := range we.cfg.Template.Outputs.Parameters {
		p := p
		if p.ValueFrom == nil || p.ValueFrom.Path == "" {
			if p.Value == nil && p.OutputDefault() != nil {
				p.Value = p.OutputDefault()
			}
			out.Parameters = append(out.Parameters, p)
			continue
		}
		val, err := we.readParameter(ctx, p.ValueFrom.Path)
		if err == nil {
			err = checkUTF8(val)
		}
		switch {
		case err == nil:
			p.Value = wf.AnyStringPtr(strings.TrimSuffix(val, "\n"))
		case errors.Is(err, ErrOutputMissing) && p.OutputDefault() != nil:
			we.log.WithField("parameter", p.Name).Infof("%s does not exist: using the default", p.ValueFrom.Path)
			p.Value = p.OutputDefault()
		case errors.Is(err, ErrOutputMissing):
			errs = append(errs, fmt.Errorf("output parameter %q: %s does not exist in container main and the parameter has no default", p.Name, p.ValueFrom.Path))
			continue
		default:
			errs = append(errs, fmt.Errorf("output parameter %q: read %s: %w", p.Name, p.ValueFrom.Path, err))
			continue
		}
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
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %w", ErrOutputMissing, err)
	}
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

// checkUTF8 refuses content that is not UTF-8: JSON would carry each bad
// byte as U+FFFD and the value would be silently altered.
func checkUTF8(s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	off := 0
	for off < len(s) {
		r, n := utf8.DecodeRuneInString(s[off:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		off += n
	}
	return fmt.Errorf("the file is not UTF-8 text (first bad byte 0x%02x at offset %d of %d): a parameter's value travels as JSON text; declare binary content as an output artifact", s[off], off, len(s))
}
