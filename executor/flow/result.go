package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
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

// collectResult reads main's stdout into out.Result as Argo's argoexec
// does: one trailing newline stripped, then the last MaxResultBytes kept (a
// script's answer is usually printed last). A longer output is cut at a
// character boundary (Argo cuts at the byte, which can leave a broken
// character for JSON to replace), out.ResultTruncated and
// out.ResultDroppedBytes say so and the log says how many bytes were kept
// and dropped. Bytes of the kept result that are not UTF-8 are replaced by
// U+FFFD when the outputs are encoded as JSON (a log that holds a stray
// binary byte is common, so the step does not fail for it): out.ResultReplaced
// and a log warning say how many and where the first one was. The reporter
// may cut it further to what its budget leaves (FitResult). A backend that
// cannot separate stdout from stderr gives the combined log, with a warning.
// A backend that reads the log the node's container runtime writes
// (LogChecker) has the log read once it has stopped growing, and is asked
// whether it may lack main's last output: out.ResultIncomplete and a log
// warning then say why.
func (we *WorkflowExecutor) collectResult(ctx context.Context, out *wf.NodeOutputs) error {
	var (
		b     []byte
		total int64
	)
	growing, err := we.readSettledLog(ctx, "the result", func() (err error) {
		b, total, err = we.readResult(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b, total = b[:len(b)-1], total-1
	}
	if len(b) > we.cfg.MaxResultBytes {
		b = b[len(b)-we.cfg.MaxResultBytes:]
	}
	if total > int64(len(b)) {
		b = b[runeStart(b, 0):]
	}
	start := total - int64(len(b)) // offset in main's output of the result's first byte
	if start > 0 {
		out.ResultTruncated = true
		out.ResultDroppedBytes = start
		we.log.Warnf("main's output is %d bytes (one trailing newline stripped): the result keeps the last %d and drops the first %d; write large output to a file and declare it as an output artifact", total, len(b), start)
	}
	if n, first := invalidUTF8(b); n > 0 {
		out.ResultReplaced = &wf.ResultReplacement{Bytes: n, FirstOffset: start + first}
		we.log.Warn(out.ResultReplaced.String())
	}
	s := string(b)
	out.Result, out.ResultIsLog = &s, true
	var why []string
	if growing != "" {
		why = append(why, growing)
	}
	if lc, ok := we.runtime.(LogChecker); ok {
		down, err := lc.LogIncomplete(ctx, wf.MainContainerName)
		if err != nil {
			// The result is reported as read; only the check failed.
			we.log.WithError(err).Warn("could not check that main's log reaches main's exit: the result is reported as read")
		}
		if down != "" {
			why = append(why, down)
		}
	}
	if len(why) > 0 {
		out.ResultIncomplete = strings.Join(why, "; and ")
		we.log.Warn("the result may be incomplete: " + out.ResultIncomplete)
	}
	return nil
}

// maxLogReads bounds how many times readSettledLog reads a log that grew
// while it was read.
const maxLogReads = 3

// readSettledLog runs read, which reads main's log for what (for
// messages), once the backend says the log has stopped growing, and again
// when its end moved during the read, maxLogReads times at most. It
// returns why the log may have been still growing when it was last read,
// or "". A backend that reads no runtime's log (not a LogChecker) is read
// once.
func (we *WorkflowExecutor) readSettledLog(ctx context.Context, what string, read func() error) (string, error) {
	lc, checks := we.runtime.(LogChecker)
	var end time.Time
	for n := 1; ; n++ {
		if checks {
			e, _, err := lc.SettleLog(ctx, wf.MainContainerName, end)
			if err != nil {
				we.log.WithError(err).Warnf("could not check that main's log has stopped growing: %s is read as it is", what)
				checks = false
			}
			end = e
		}
		if err := read(); err != nil {
			return "", err
		}
		if !checks {
			return "", nil
		}
		after, settled, err := lc.SettleLog(ctx, wf.MainContainerName, end)
		if err != nil {
			we.log.WithError(err).Warnf("could not check that main's log did not grow while it was read: %s is kept as read", what)
			return "", nil
		}
		if settled && after.Equal(end) {
			return "", nil
		}
		if n == maxLogReads {
			return fmt.Sprintf("main's log was still growing after main exited: it was read %d times and its last entry moved each time (last written at %s), so %s may be missing its end; "+
				"the node's container runtime copies output to the log after main prints it, and was behind (a busy node); run the step again, or use the emissary or docker backend, which do not read it from the runtime's log",
				n, after.UTC().Format(time.RFC3339Nano), what), nil
		}
		we.log.WithField("reads", n).Infof("main's log grew while it was read for %s (the node's runtime was still copying main's output to it): reading it again", what)
		end = after
	}
}

// readResult reads main's stdout (or, where the backend cannot separate
// it, stdout and stderr interleaved, with a warning) and returns its last
// MaxResultBytes+1 bytes (one more than the result keeps: the trailing
// newline, stripped before the cut as Argo does) and its length.
func (we *WorkflowExecutor) readResult(ctx context.Context) ([]byte, int64, error) {
	rc, err := we.runtime.GetOutputStream(ctx, wf.MainContainerName, false)
	if errors.Is(err, executor.ErrNotSupported) {
		we.log.WithError(err).Warn("stdout alone is not available: the result holds stdout and stderr interleaved")
		rc, err = we.runtime.GetOutputStream(ctx, wf.MainContainerName, true)
	}
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	tail := &tailKeeper{max: we.cfg.MaxResultBytes + 1}
	if _, err := io.Copy(tail, rc); err != nil {
		return nil, 0, fmt.Errorf("read main's output: %w", err)
	}
	return tail.bytes(), tail.total, nil
}

// LogChecker is implemented by backends that read main's output from the
// log the node's container runtime writes (k8sapi, kubelet). The runtime
// copies output to that log after the container prints it, so the log can
// still be growing when the container's exit is known, and it loses what
// main printed last when the runtime was down as main exited.
type LogChecker interface {
	// SettleLog waits until the log of the named container, which has
	// exited, has stopped growing, and returns the runtime's timestamp of
	// its last entry (zero for an empty log); an end equal to known, one
	// the caller saw settle before, is settled at once. settled is false
	// when the log was still growing when SettleLog gave up.
	SettleLog(ctx context.Context, containerName string, known time.Time) (end time.Time, settled bool, err error)
	// LogIncomplete returns why the log of the named container, which has
	// exited, may be missing the end of what it printed, or "" when
	// nothing says so.
	LogIncomplete(ctx context.Context, containerName string) (string, error)
}

// invalidUTF8 counts the bytes of b that are not part of a valid UTF-8
// character, each of which encoding/json replaces with one U+FFFD, and
// returns the offset of the first (-1 when there is none).
func invalidUTF8(b []byte) (n int64, first int64) {
	first = -1
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			if first < 0 {
				first = int64(i)
			}
			n++
		}
		i += size
	}
	return n, first
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
	// cutAt is outputs with the first cut bytes of the result dropped; what
	// it says was replaced is counted again over what is left.
	cutAt := func(cut int) wf.NodeOutputs {
		o := *outputs
		s := full[cut:]
		o.Result, o.ResultTruncated, o.ResultDroppedBytes = &s, true, outputs.ResultDroppedBytes+int64(cut)
		if o.ResultReplaced != nil {
			o.ResultReplaced = nil
			if n, first := invalidUTF8([]byte(s)); n > 0 {
				o.ResultReplaced = &wf.ResultReplacement{Bytes: n, FirstOffset: o.ResultDroppedBytes + first}
			}
		}
		return o
	}
	encode := func(cut int) ([]byte, error) {
		o := cutAt(cut)
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
	*outputs = cutAt(hi)
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
