// Command argoexec-step is argoexec's own one-step pod renderer and runner
// (named workflow-controller before 0.2.0; it is no controller): `render`
// prints the pod of one step, `run` creates it in a cluster, waits for it
// and prints its outputs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/argoexec/argoexec/cmd/argoexec-step/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := app.Run(ctx, os.Args[1:], app.IO{Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(app.ExitCode(err))
}
