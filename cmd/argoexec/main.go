// Command argoexec is the executor injected into every workflow pod: `argoexec
// init` stages inputs before main starts, `argoexec wait` runs beside main and
// collects and reports its outputs.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/argoexec/argoexec/cmd/argoexec/app"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func main() {
	// wait streams everything it copies, so its heap is small and short-lived:
	// collecting at 50% growth instead of 100% kept the peak RSS of a 256 MiB
	// artifact at 30.8 MiB instead of 32.4 MiB for the same CPU (BENCHMARKS.md).
	// GOGC in the environment still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := app.Run(ctx, os.Args[1:], app.IO{Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv, TerminationLog: wf.TerminationLogPath, NamespaceFile: app.NamespaceFile})
	stop()
	os.Exit(app.ExitCode(err))
}
