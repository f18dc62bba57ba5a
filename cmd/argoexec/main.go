// Command argoexec is the executor injected into every workflow pod: `argoexec
// init` stages inputs before main starts, `argoexec wait` runs beside main and
// collects and reports its outputs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/argoexec/argoexec/cmd/argoexec/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := app.Run(ctx, os.Args[1:], app.IO{Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(app.ExitCode(err))
}
