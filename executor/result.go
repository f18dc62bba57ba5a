package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// includeResult says whether wait reports main's stdout as the result: as
// the protocol says, else for script templates.
func (we *WorkflowExecutor) includeResult() bool {
	if p := we.cfg.Protocol.IncludeScriptOutput; p != nil {
		return *p
	}
	return we.cfg.Template.Script != nil
}

// collectResult reads main's stdout into out.Result, keeping the last
// MaxResultBytes (a script's answer is usually printed last, and Argo keeps
// the tail too) with one trailing newline stripped. A longer output is cut,
// out.ResultTruncated says so and the log says how many bytes were dropped.
// A backend that cannot separate stdout from stderr gives the combined log,
// with a warning.
func (we *WorkflowExecutor) collectResult(ctx context.Context, out *wf.NodeOutputs) error {
	rc, err := we.runtime.GetOutputStream(ctx, wf.MainContainerName, false)
	if errors.Is(err, ErrNotSupported) {
		we.log.WithError(err).Warn("stdout alone is not available: the result holds stdout and stderr interleaved")
		rc, err = we.runtime.GetOutputStream(ctx, wf.MainContainerName, true)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	tail := &tailKeeper{max: we.cfg.MaxResultBytes}
	if _, err := io.Copy(tail, rc); err != nil {
		return fmt.Errorf("read main's output: %w", err)
	}
	b := tail.bytes()
	if dropped := tail.total - int64(len(b)); dropped > 0 {
		out.ResultTruncated = true
		we.log.Warnf("main's output is %d bytes: the result keeps the last %d and drops the first %d; write large output to a file and declare it as an output artifact", tail.total, len(b), dropped)
	}
	s := strings.TrimSuffix(string(b), "\n")
	out.Result = &s
	return nil
}

// tailKeeper is an io.Writer that keeps the last max bytes written to it and
// counts them all.
type tailKeeper struct {
	max   int
	total int64
	buf   []byte
}

func (t *tailKeeper) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

func (t *tailKeeper) bytes() []byte { return t.buf }
