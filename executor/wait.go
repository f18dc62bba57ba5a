package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// ErrOutputMissing is wrapped by errors for an output parameter or artifact
// whose path does not exist in main.
var ErrOutputMissing = errors.New("output path does not exist")

// Wait is `argoexec wait`: it waits for main, then collects and reports its
// outputs and stops leftover sidecars. Every step that can still run does,
// even after another failed; the error joins every failure and names its step.
//
// When main runs past the template's activeDeadlineSeconds, Wait stops it
// (Kill, bounded by StopTimeout) and saves what exists. When Wait itself is
// interrupted (ctx ends: SIGTERM, which only the kubelet sends, because the
// pod is being deleted, was evicted or hit its own activeDeadlineSeconds),
// the kubelet is already stopping main from outside, so Wait does not, and
// goes straight to saving. Saving is bounded by SaveTimeout, of which the
// last ReportReserve is kept for the report alone: a backend that hangs
// (a kubelet busy tearing the pod down) costs the outputs it could not
// collect, never the report of those it could.
func (we *WorkflowExecutor) Wait(ctx context.Context) error {
	var errs stepErrors
	start := time.Now()
	saving, since := we.waitMain(ctx, &errs)
	msg := "main exited; collecting outputs"
	if saving {
		msg = "saving what exists (main did not exit by itself)"
	}
	we.log.WithField("elapsed", time.Since(start).Round(time.Millisecond)).Info(msg)

	// While saving, everything ends by end and collecting ends ReportReserve
	// before it.
	collectCtx, cancelCollect := ctx, context.CancelFunc(func() {})
	var end time.Time
	if saving {
		end = since.Add(we.cfg.SaveTimeout)
		collectCtx, cancelCollect = context.WithDeadline(context.WithoutCancel(ctx), end.Add(-we.cfg.ReportReserve))
	}
	defer cancelCollect()

	out := &wf.NodeOutputs{}
	exitCtx, cancelExit := collectCtx, context.CancelFunc(func() {})
	if saving {
		// main may still be running (it could not be stopped): do not let
		// waiting for its exit code use up the time for the outputs.
		exitCtx, cancelExit = context.WithTimeout(collectCtx, exitCodeTimeout)
	}
	if code, err := we.runtime.GetExitCode(exitCtx, wf.MainContainerName); err != nil {
		errs.add("read main's exit code", err)
	} else {
		out.ExitCode = &code
	}
	cancelExit()
	if we.cfg.Template.Script != nil {
		errs.add("collect script result", we.collectResult(collectCtx, out))
	}
	errs.add("collect output parameters", we.collectParameters(collectCtx, out))
	errs.add("collect output artifacts", we.collectArtifacts(collectCtx, out))
	// The report ignores SIGTERM (the kubelet gives the pod its grace
	// period): while saving it has until end, else SaveTimeout from now.
	reportCtx, cancelReport := context.WithTimeout(context.WithoutCancel(ctx), we.cfg.SaveTimeout)
	if saving {
		cancelReport()
		reportCtx, cancelReport = context.WithDeadline(context.WithoutCancel(ctx), end)
	}
	defer cancelReport()
	if we.reporter != nil {
		errs.add("report outputs", we.reporter.Report(reportCtx, out))
	}
	if we.cfg.SidecarMode == wf.SidecarModeLegacy {
		sidecarCtx := ctx
		if saving {
			sidecarCtx = reportCtx
		}
		errs.add("stop sidecars", we.stopSidecars(sidecarCtx))
	}
	we.log.WithField("elapsed", time.Since(start).Round(time.Millisecond)).Info("wait finished")
	return errs.err()
}

// exitCodeTimeout bounds reading main's exit code while saving after an
// interruption or a deadline; the kubelet reports an exit within about a
// second of it.
const exitCodeTimeout = 5 * time.Second

// waitMain blocks until main has exited, ctx ended, or the template's
// deadline passed; in the last two cases it records why and returns true and
// when saving began: the rest of the flow is saving what exists, within
// SaveTimeout of that. On the deadline it stops main first, within
// StopTimeout (part of SaveTimeout).
func (we *WorkflowExecutor) waitMain(ctx context.Context, errs *stepErrors) (saving bool, since time.Time) {
	waitCtx, cancelWait := ctx, context.CancelFunc(func() {})
	deadline := we.cfg.Template.ActiveDeadlineSeconds
	if deadline != nil && *deadline > 0 {
		waitCtx, cancelWait = context.WithTimeout(ctx, time.Duration(*deadline)*time.Second)
	}
	defer cancelWait()
	err := we.runtime.Wait(waitCtx, []string{wf.MainContainerName})
	since = time.Now()
	switch {
	case err == nil:
		return false, since
	case ctx.Err() != nil:
		errs.add("wait for main", fmt.Errorf("interrupted (%w) while main was running: the kubelet is stopping the pod's containers; saving what exists", context.Cause(ctx)))
		return true, since
	case waitCtx.Err() != nil:
		errs.add("wait for main", fmt.Errorf("main exceeded the template's activeDeadlineSeconds (%ds); stopping it and saving what exists", *deadline))
	default:
		errs.add("wait for main", err)
		return true, since
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(we.cfg.StopTimeout, we.cfg.SaveTimeout-we.cfg.ReportReserve))
	defer cancel()
	if kerr := we.runtime.Kill(stopCtx, []string{wf.MainContainerName}, we.cfg.KillGrace/2); kerr != nil {
		errs.add("stop main", kerr)
	}
	return true, since
}

// collectResult reads main's stdout into out.Result, at most MaxResultBytes;
// a longer output is cut there and out.ResultTruncated says so.
func (we *WorkflowExecutor) collectResult(ctx context.Context, out *wf.NodeOutputs) error {
	rc, err := we.runtime.GetOutputStream(ctx, wf.MainContainerName, false)
	if errors.Is(err, ErrNotSupported) {
		we.log.WithError(err).Warn("this backend cannot separate stdout from stderr: the script result holds both")
		rc, err = we.runtime.GetOutputStream(ctx, wf.MainContainerName, true)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	limit := we.cfg.MaxResultBytes
	b, err := io.ReadAll(io.LimitReader(rc, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("read main's output: %w", err)
	}
	if len(b) > limit {
		b = b[:limit]
		out.ResultTruncated = true
		we.log.Warnf("script result is longer than %d bytes: reporting the first %d bytes and resultTruncated: true; write large output to a file and declare it as an output artifact", limit, limit)
	}
	s := strings.TrimSuffix(string(b), "\n")
	out.Result = &s
	return nil
}

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

// maxParameterBytes bounds one parameter read from a volume: the whole
// outputs annotation cannot be larger.
const maxParameterBytes = wf.MaxAnnotationBytes

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
	b, err := io.ReadAll(io.LimitReader(f, maxParameterBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxParameterBytes {
		return "", fmt.Errorf("%s is larger than %d bytes, more than the outputs annotation can hold; declare it as an output artifact", p, maxParameterBytes)
	}
	return string(b), nil
}

// isNotExist recognises a backend's "no such file" error. Backends wrap
// fs.ErrNotExist for a missing path.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist)
}

// stopSidecars, in legacy sidecar mode, kills every container but main,
// wait and init. The error names the containers that survived.
func (we *WorkflowExecutor) stopSidecars(ctx context.Context) error {
	names, err := we.runtime.ListContainerNames(ctx)
	if err != nil {
		return err
	}
	var sidecars []string
	for _, n := range names {
		if n != wf.MainContainerName && n != wf.WaitContainerName && n != wf.InitContainerName {
			sidecars = append(sidecars, n)
		}
	}
	if len(sidecars) == 0 {
		return nil
	}
	sort.Strings(sidecars)
	we.log.WithField("sidecars", sidecars).Info("stopping sidecars (sidecarMode: legacy)")
	return we.runtime.Kill(ctx, sidecars, we.cfg.KillGrace)
}
