package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/argoexec/argoexec/executor"
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
// the tail too) with one trailing newline stripped. A longer output is cut
// at a character boundary, out.ResultTruncated and out.ResultDroppedBytes
// say so and the log says how many bytes were dropped. The reporter may cut
// it further to what its budget leaves (FitResult). A backend that cannot
// separate stdout from stderr gives the combined log, with a warning.
func (we *WorkflowExecutor) collectResult(ctx context.Context, out *wf.NodeOutputs) error {
	rc, err := we.runtime.GetOutputStream(ctx, wf.MainContainerName, false)
	if errors.Is(err, executor.ErrNotSupported) {
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
	if tail.total > int64(len(b)) {
		b = b[runeStart(b, 0):]
	}
	if dropped := tail.total - int64(len(b)); dropped > 0 {
		out.ResultTruncated = true
		out.ResultDroppedBytes = dropped
		we.log.Warnf("main's output is %d bytes: the result keeps the last %d and drops the first %d; write large output to a file and declare it as an output artifact", tail.total, len(b), dropped)
	}
	s := strings.TrimSuffix(string(b), "\n")
	out.Result, out.ResultIsLog = &s, true
	return nil
}

// FitResult encodes outputs as JSON, cutting the head off outputs.Result in
// place (at a character boundary, so the tail a script prints last is kept)
// until the encoding fits budget bytes; a cut sets ResultTruncated and adds
// what it dropped to ResultDroppedBytes. It returns the encoding and the bytes it
// dropped. It cuts only a result that is a log (ResultIsLog); when the
// outputs do not fit even with an empty result, or the result is a
// document, it cuts nothing and returns the whole encoding: the caller's
// budget check then names the outputs that do not fit.
func FitResult(outputs *wf.NodeOutputs, budget int) ([]byte, int, error) {
	b, err := json.Marshal(outputs)
	if err != nil {
		return nil, 0, fmt.Errorf("encode outputs: %w", err)
	}
	if len(b) <= budget || outputs.Result == nil || !outputs.ResultIsLog {
		return b, 0, nil
	}
	full := *outputs.Result
	fullBytes := []byte(full)
	encode := func(cut int) ([]byte, error) {
		o := *outputs
		s := full[cut:]
		o.Result, o.ResultTruncated, o.ResultDroppedBytes = &s, true, outputs.ResultDroppedBytes+int64(cut)
		return json.Marshal(&o)
	}
	if e, err := encode(len(full)); err != nil || len(e) > budget {
		return b, 0, err
	}
	// The smallest character-aligned cut that fits; every cut tried is
	// aligned, and hi always fits.
	lo, hi := 0, len(full)
	for lo < hi {
		mid := runeStart(fullBytes, (lo+hi)/2)
		if mid >= hi {
			break
		}
		e, err := encode(mid)
		if err != nil {
			return nil, 0, fmt.Errorf("encode outputs: %w", err)
		}
		if len(e) <= budget {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	b, err = encode(hi)
	if err != nil {
		return nil, 0, fmt.Errorf("encode outputs: %w", err)
	}
	s := full[hi:]
	outputs.Result, outputs.ResultTruncated = &s, true
	outputs.ResultDroppedBytes += int64(hi)
	return b, hi, nil
}

// runeStart is the first offset at or after i where a UTF-8 character
// starts (at most 3 bytes on; len(b) at the end), so a cut there leaves no
// broken character for JSON to replace.
func runeStart(b []byte, i int) int {
	for n := 0; i < len(b) && n < utf8.UTFMax-1 && !utf8.RuneStart(b[i]); n++ {
		i++
	}
	return i
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
