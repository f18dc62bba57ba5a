package podexec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The bounds of LogIncomplete.
const (
	// lateExitReport is how much later than its finishedAt (rounded up to
	// the second the status gives it in) a container's exit may first show
	// in the status before LogIncomplete looks at the container's log. The
	// kubelet reports an exit 0.7-0.9 s after it happens; it reports it
	// only once the container runtime answers it again.
	lateExitReport = 3 * time.Second
	// quietBeforeExit is how long before its exit a container may have
	// printed its last line for its log to count as reaching the exit.
	quietBeforeExit = 2 * time.Second
	// maxTimestampBytes bounds the read of a log line's timestamp prefix.
	maxTimestampBytes = 64
	// logQuiet is how long ago the last entry of a container's log must
	// have been written for SettleLog to take the log as complete: the
	// runtime has then written nothing for that long after the container
	// exited. The runtime stamps each entry when it writes it, on the
	// node's clock, which is wait's: wait runs on the same node.
	logQuiet = 50 * time.Millisecond
	// logSettleMax bounds SettleLog: a log still growing after that is
	// read as it is, and its caller says what may be missing.
	logSettleMax = 5 * time.Second
)

// SettleLog waits until the log of the named container, which has exited,
// has stopped growing, and returns where it ends: the runtime's timestamp
// of its last entry, stamped when the runtime wrote the entry to the log
// file (zero for an empty log). settled is false when the log was still
// growing after logSettleMax.
//
// The container runtime copies what a container prints to its log file
// after the container prints it, through a pipe and a buffer; on a busy
// node that copy can lag the container's exit by a second and more, and
// the kubelet can report the exit before the copy is done (seen: a log
// read at +0.95 s that held 278,528 of 300,009 bytes, its end missing).
// A log whose last entry was written logQuiet ago or longer is taken as
// complete; one written more recently is asked again once it would be
// that old (an empty log, after logQuiet), and has settled when its end
// has not moved. A log that still ends at known (an end the caller saw
// settle before; zero for none) has settled at once. The caller reads the
// log after SettleLog and calls it again with the end it returned: an end
// that moved in between means the read missed what was written meanwhile.
func (e *Engine) SettleLog(ctx context.Context, container string, last LastLogLine, known time.Time) (end time.Time, settled bool, err error) {
	clk := e.cfg.Clock
	deadline := clk.Now().Add(logSettleMax)
	prev, seen := known, !known.IsZero()
	for {
		ts, has, err := last(ctx, container)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("%s: find where the log of container %q of pod %s ends: %w", e.cfg.Backend, container, e.cfg.Pod, err)
		}
		end = time.Time{}
		if has {
			end = ts
		}
		now := clk.Now()
		age := now.Sub(ts)
		if (seen && end.Equal(prev)) || (has && age >= logQuiet) {
			return end, true, nil
		}
		if !now.Before(deadline) {
			return end, false, nil
		}
		wait := logQuiet
		if has && age > 0 {
			wait -= age
		}
		prev, seen = end, true
		select {
		case <-ctx.Done():
			return end, false, ctx.Err()
		case <-clk.After(wait):
		}
	}
}

// exitReport is when one instance (ID) of a container exited, by the
// status's finishedAt (whole seconds), and when the engine first saw the
// status show it.
type exitReport struct {
	id             string
	finished, seen time.Time
}

// noteExits records, for each named container that p, a version of the pod
// that the source has just handed over, shows terminated, when the engine
// first saw that instance terminated. A pod read once (not followed) says
// nothing of when its exits were reported, and is not noted.
func (e *Engine) noteExits(p *corev1.Pod, names []string) {
	now := e.cfg.Clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range names {
		st, _ := containerStatus(p, n)
		t := st.State.Terminated
		if t == nil || e.reports[n].id == st.ContainerID {
			continue
		}
		e.reports[n] = exitReport{id: st.ContainerID, finished: t.FinishedAt.Time, seen: now}
	}
}

// LastLogLine returns the timestamp of the named container's last log line
// (the CRI timestamp of when the runtime wrote it); ok is false for an
// empty log. LastLineTime parses the answer of a log endpoint asked for
// tailLines=1 and timestamps=true.
type LastLogLine func(ctx context.Context, container string) (ts time.Time, ok bool, err error)

// LogIncomplete says why the log of the named container, which has exited,
// may be missing the end of what it printed, or "" when nothing says so.
//
// The container runtime's CRI plugin (containerd's) copies a container's
// stdout and stderr to its log file; what the container prints while the
// runtime is down waits in a pipe, and is lost for good when the container
// exits before the runtime is back. That leaves a mark the engine can see:
// the kubelet learns of the exit only from the runtime, so the status shows
// it late, and the log stops before the exit. LogIncomplete says so when the
// engine first saw the status show this instance's exit more than
// lateExitReport after its finishedAt while following the pod (Wait's
// status path), and the log (asked through last) is
// empty or ends more than quietBeforeExit before the exit. A late report
// alone is no sign (an API server or a kubelet that was down delays it
// too, and loses nothing); nor is an exit that Wait's exec fast path saw
// (the runtime served the session when the container exited).
func (e *Engine) LogIncomplete(ctx context.Context, container string, last LastLogLine) (string, error) {
	e.mu.Lock()
	r, ok := e.reports[container]
	e.mu.Unlock()
	if !ok || e.sawExit(container, r.id) {
		return "", nil
	}
	late := r.seen.Sub(r.finished.Add(time.Second))
	if late <= lateExitReport {
		return "", nil
	}
	ts, has, err := last(ctx, container)
	if err != nil {
		return "", fmt.Errorf("%s: check that the log of container %q of pod %s reaches its exit: %w", e.cfg.Backend, container, e.cfg.Pod, err)
	}
	if has && !ts.Before(r.finished.Add(-quietBeforeExit)) {
		return "", nil
	}
	end := "is empty"
	if has {
		end = fmt.Sprintf("ends at %s, %s before the exit", ts.UTC().Format(time.RFC3339Nano), r.finished.Sub(ts).Round(time.Second))
	}
	return fmt.Sprintf("container %q exited at %s but the status showed it only %s later, and its log %s: "+
		"the node's container runtime was probably down when it exited, and what a container prints while the runtime is down never reaches its log, "+
		"so its output may be missing its end; run the step again, or use the emissary or docker backend, which do not read it from the runtime's log",
		container, r.finished.UTC().Format(time.RFC3339), r.seen.Sub(r.finished).Round(time.Second), end), nil
}

// LastLineTime reads the timestamp that prefixes the first line of r, the
// answer of a log endpoint asked for a container's last line with
// timestamps (RFC 3339 with nanoseconds, then a space). ok is false when r
// is empty.
func LastLineTime(r io.Reader) (ts time.Time, ok bool, err error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxTimestampBytes), maxTimestampBytes)
	prefix, err := br.ReadString(' ')
	switch {
	case errors.Is(err, io.EOF) && prefix == "":
		return time.Time{}, false, nil
	case err != nil && !errors.Is(err, io.EOF):
		return time.Time{}, false, fmt.Errorf("read the log's last line: %w", err)
	}
	s := strings.TrimSpace(prefix)
	ts, perr := time.Parse(time.RFC3339Nano, s)
	if perr != nil {
		return time.Time{}, false, fmt.Errorf("the log's last line does not start with a timestamp (%q): %w", s, perr)
	}
	return ts, true, nil
}
