package flow

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProgressReporter publishes a step's self-reported progress, N/M
// (TaskResultReporter implements it).
type ProgressReporter interface {
	ReportProgress(ctx context.Context, progress string) error
}

// ProgressSettings turn on the self-reported progress monitor while main
// runs (Argo's ARGO_PROGRESS_FILE): main writes lines N/M to File; wait
// reads its last line every FileTick and reports a new valid one at most
// every PatchTick (at the first read after it).
type ProgressSettings struct {
	// File is where main writes progress; empty turns the monitor off.
	File string
	// FileTick and PatchTick are the read and report intervals.
	FileTick, PatchTick time.Duration
	// Reporter publishes it.
	Reporter ProgressReporter
}

// monitorProgress starts the progress monitor, if the protocol asks for
// one, and returns what stops it and waits for it to end.
func (we *WorkflowExecutor) monitorProgress(ctx context.Context) (stop func()) {
	p := we.cfg.Protocol.Progress
	if p.File == "" || p.Reporter == nil || p.FileTick <= 0 || p.PatchTick <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// One ticker: the report is due at the first file tick PatchTick
		// after the last one, so reads and reports never race.
		tick := we.cfg.Clock.NewTicker(p.FileTick)
		defer tick.Stop()
		lastReport := we.cfg.Clock.Now()
		var last, pending string
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C():
			}
			switch line, err := lastLine(p.File); {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				we.log.WithError(err).WithField("file", p.File).Info("cannot read the progress file")
			case line == "" || line == last:
			case validProgress(line):
				last, pending = line, line
				we.log.WithField("progress", line).Info("progress")
			default:
				last = line
				we.log.WithField("line", line).Infof("%s: not a progress line (want N/M with 0 <= N <= M, M > 0)", p.File)
			}
			if pending == "" || we.cfg.Clock.Since(lastReport) < p.PatchTick {
				continue
			}
			if err := p.Reporter.ReportProgress(ctx, pending); err != nil {
				we.log.WithError(err).Info("report progress")
				continue
			}
			pending, lastReport = "", we.cfg.Clock.Now()
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// lastLine is the last non-empty line of file, trimmed.
func lastLine(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// validProgress says whether s is N/M with 0 <= N <= M and M > 0, as Argo
// parses it.
func validProgress(s string) bool {
	ns, ms, ok := strings.Cut(s, "/")
	if !ok {
		return false
	}
	n, err1 := strconv.ParseInt(ns, 10, 64)
	m, err2 := strconv.ParseInt(ms, 10, 64)
	return err1 == nil && err2 == nil && n >= 0 && n <= m && m > 0
}
