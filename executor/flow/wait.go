package flow

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// The report carries no exit code: either controller reads it from main's
// container status, so the report never waits for the kubelet to publish it.
//
// When main runs past its deadline (the template's activeDeadlineSeconds, or
// the controller's Protocol.Deadline), Wait stops it (Kill, bounded by
// StopTimeout) and saves what exists. When Wait itself is interrupted (ctx
// ends on SIGTERM), what that means is the protocol's: under our controller
// only the kubelet sends it (the pod is being deleted, was evicted or hit its
// own activeDeadlineSeconds) and is already stopping main from outside, so
// Wait goes straight to saving; under Argo's controller it is the stop
// command (Protocol.SignalStopsMain), so Wait stops main first. Saving is
// bounded by SaveTimeout, of which the last ReportReserve is kept for the
// report alone: a backend that hangs costs the outputs it could not collect,
// never the report of those it could.
func (we *WorkflowExecutor) Wait(ctx context.Context) error {
	var errs stepErrors
	clk := we.cfg.Clock
	start := clk.Now()
	stopProgress := we.monitorProgress(ctx)
	if err := we.checkArtifacts(false); err != nil {
		// Said now, while main runs (a pod without init ran main unchecked);
		// saving them fails with the same error once main exits.
		we.log.WithError(err).Error("output artifacts argoexec cannot save: the step will fail once main exits")
	}
	we.log.Info("waiting for main to exit")
	window := we.waitMain(ctx, &errs)
	stopProgress()
	msg := "main exited; collecting outputs"
	if window.saving() {
		msg = "saving what exists (main did not exit by itself)"
	}
	we.log.WithField("elapsed", clk.Since(start).Round(time.Millisecond)).Info(msg)

	collectCtx, cancelCollect := window.collect(ctx)
	collectStart := clk.Now()
	out := &wf.NodeOutputs{}
	// The result (a log read) is fetched beside the parameters and
	// artifacts, not before them: each writes only its own fields of out.
	// So is main's log, when archived: it is reported after the template's
	// artifacts, as Argo's argoexec appends it.
	var resultErr, logsErr error
	var logArt *wf.Artifact
	var resultDone sync.WaitGroup
	if we.includeResult() {
		resultDone.Go(func() { resultErr = we.collectResult(collectCtx, out) })
	}
	if we.cfg.Protocol.ArchiveLogs {
		resultDone.Go(func() { logArt, logsErr = we.saveLogs(collectCtx) })
	}
	paramsErr := we.collectParameters(collectCtx, out)
	artifactsErr := we.collectArtifacts(collectCtx, out)
	resultDone.Wait()
	if logArt != nil {
		out.Artifacts = append(out.Artifacts, *logArt)
	}
	errs.add("collect script result", resultErr)
	errs.add("save main's log (archiveLogs)", logsErr)
	errs.add("collect output parameters", paramsErr)
	errs.add("collect output artifacts", artifactsErr)
	cancelCollect()

	reportStart := clk.Now()
	reportCtx, cancelReport := window.report(ctx, reportStart)
	defer cancelReport()
	if we.reporter != nil {
		errs.add("report outputs", we.reporter.Report(reportCtx, out))
	}
	reported := clk.Now()
	if we.cfg.SidecarMode == wf.SidecarModeLegacy {
		sidecarCtx := ctx
		if window.saving() {
			sidecarCtx = reportCtx
		}
		errs.add("stop sidecars", we.stopSidecars(sidecarCtx))
	}
	we.log.WithField("elapsed", clk.Since(start).Round(time.Millisecond)).
		WithField("collect", reportStart.Sub(collectStart).Round(time.Millisecond)).
		WithField("report", reported.Sub(reportStart).Round(time.Millisecond)).Info("wait finished")
	return errs.err()
}

// waitMain blocks until main has exited, ctx ended, or main's deadline
// passed. It returns the save window: zero when main exited by itself, else
// bounded from the moment saving began, with why recorded in errs. On the
// deadline, and on ctx's end when the protocol says the signal is a stop
// request, it stops main first, within the window.
func (we *WorkflowExecutor) waitMain(ctx context.Context, errs *stepErrors) saveWindow {
	window := saveWindow{total: we.cfg.Timing.SaveTimeout, reserve: we.cfg.Timing.ReportReserve}
	waitStart := we.cfg.Clock.Now()
	waitCtx, cancelWait := context.WithCancel(ctx)
	deadline, why := we.deadline()
	if !deadline.IsZero() {
		waitCtx, cancelWait = context.WithDeadline(ctx, deadline)
	}
	defer cancelWait()
	err := we.runtime.Wait(waitCtx, we.cfg.Template.MainContainerNames())
	if err == nil {
		return window
	}
	window.start = we.cfg.Clock.Now()
	switch {
	case ctx.Err() != nil && we.cfg.Protocol.SignalStopsMain:
		errs.add("wait for main", fmt.Errorf("stop signal (%w) while main was running%s; stopping main and saving what exists",
			context.Cause(ctx), we.signalSender(window.start.Sub(waitStart))))
	case ctx.Err() != nil:
		errs.add("wait for main", fmt.Errorf("interrupted (%w) while main was running: the kubelet is stopping the pod's containers; saving what exists", context.Cause(ctx)))
		return window
	case waitCtx.Err() != nil:
		errs.add("wait for main", fmt.Errorf("main exceeded %s; stopping it and saving what exists", why))
	default:
		errs.add("wait for main", err)
		return window
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), window.stopBound(we.cfg.Timing.StopTimeout))
	defer cancel()
	if kerr := we.runtime.Kill(stopCtx, we.cfg.Template.MainContainerNames(), we.cfg.Timing.KillGrace/2); kerr != nil {
		errs.add("stop main", kerr)
	}
	return window
}

// kubeletDeadlineSlack is how much later than the pod wait may have started
// waiting for main, for signalSender's guess: the pod's activeDeadlineSeconds
// counts from the pod's start, wait's view from its own.
const kubeletDeadlineSlack = 10 * time.Second

// signalSender says, for the message of a stop signal that came after
// waited of waiting for main, who may have sent it, as far as wait can
// know: under Argo's protocol the controller's stop request (kill -15), and
// the kubelet when it stops the pod; when the template's
// activeDeadlineSeconds (which Argo's controller puts on the pod, and the
// kubelet enforces) has run out, most likely the kubelet.
func (we *WorkflowExecutor) signalSender(waited time.Duration) string {
	if d := we.cfg.Template.ActiveDeadlineSeconds; d != nil && *d > 0 && waited >= time.Duration(*d)*time.Second-kubeletDeadlineSlack {
		return fmt.Sprintf(" after %s, when the pod's activeDeadlineSeconds (%ds, from the template) ran out: most likely the kubelet enforcing it, not a stop request from the controller",
			waited.Round(time.Second), *d)
	}
	return " (sent by the controller to stop the step, or by the kubelet stopping the pod: deletion, eviction, or the pod's activeDeadlineSeconds)"
}

// deadline is when main must have exited, the earlier of the template's
// activeDeadlineSeconds (from now) and the protocol's Deadline, and what set
// it, for messages; zero when neither does.
func (we *WorkflowExecutor) deadline() (time.Time, string) {
	var at time.Time
	var why string
	if d := we.cfg.Template.ActiveDeadlineSeconds; d != nil && *d > 0 {
		at, why = we.cfg.Clock.Now().Add(time.Duration(*d)*time.Second), fmt.Sprintf("the template's activeDeadlineSeconds (%ds)", *d)
	}
	if p := we.cfg.Protocol.Deadline; !p.IsZero() && (at.IsZero() || p.Before(at)) {
		at, why = p, "the workflow's deadline ("+p.UTC().Format(time.RFC3339)+")"
	}
	return at, why
}
