// Command workflow-controller is the controller side of argoexec, for now
// two subcommands: `render` prints the pod of one step, `run` creates it in
// a cluster, waits for it and prints its outputs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/argoexec/argoexec/cmd/workflow-controller/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := app.Run(ctx, os.Args[1:], app.IO{Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(app.ExitCode(err))
}
