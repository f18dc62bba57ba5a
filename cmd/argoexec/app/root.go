// Package app is argoexec's command tree: thin cobra commands over options
// structs that are completed from flags and environment, validated, then run.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/argoexec/argoexec/pkg/cli"
	"github.com/argoexec/argoexec/pkg/version"
)

// IO is the process's environment as the commands see it, injected so that
// tests can drive them without touching the real process.
type IO struct {
	Out, Err io.Writer
	// Getenv reads an environment variable (os.Getenv in main).
	Getenv func(string) string
	// NamespaceFile is the service account's namespace file (NamespaceFile
	// in main); empty means none.
	NamespaceFile string
	// TerminationLog is where a failure is written for the controller
	// (workflow.TerminationLogPath in main); empty writes none.
	TerminationLog string
}

// Exit codes of argoexec, mapped from errors in ExitCode and nowhere else.
const (
	// ExitOK: everything that was asked succeeded.
	ExitOK = 0
	// ExitFailed: a step failed (the error says which).
	ExitFailed = 1
	// ExitUsage: bad flags or environment; nothing was done.
	ExitUsage = 2
	// ExitInterrupted: stopped by SIGTERM or SIGINT.
	ExitInterrupted = 143
)

// UsageError marks errors in flags or environment, found before any work.
type UsageError = cli.UsageError

func usageErrorf(format string, args ...any) error { return cli.Usagef(format, args...) }

func wrapRun(err error) error { return cli.RunE(err) }

// ExitCode maps an error returned by Run to the process's exit code.
func ExitCode(err error) int {
	var usage *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	default:
		return ExitFailed
	}
}

// globalOptions are the flags every command takes.
type globalOptions struct {
	cli.LogOptions
	// GlogLevel is client-go's (klog's) verbosity, Argo's --gloglevel.
	GlogLevel int
}

// addFlags registers the flags on fs.
func (o *globalOptions) addFlags(fs *pflag.FlagSet) {
	o.AddFlags(fs)
	fs.IntVar(&o.GlogLevel, "gloglevel", 0, "verbosity of the Kubernetes client library's own log (klog -v)")
}

// logger builds the logger and sets klog's verbosity (klog's state is its
// own package's; client-go logs through it).
func (o *globalOptions) logger(stderr io.Writer) (*logrus.Logger, error) {
	if o.GlogLevel != 0 {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		if err := fs.Set("v", strconv.Itoa(o.GlogLevel)); err != nil {
			return nil, usageErrorf("--gloglevel: %v", err)
		}
	}
	return o.Logger(stderr)
}

// runners holds what each command does once its options are complete; tests
// replace them to check parsing apart from behaviour.
type runners struct {
	wait     func(ctx context.Context, o *WaitOptions) error
	init     func(ctx context.Context, o *InitOptions) error
	resource func(ctx context.Context, o *ResourceOptions) error
	data     func(ctx context.Context, o *DataOptions) error
	git      func(ctx context.Context, o *ArtifactGitOptions) error
	// agentInit and agentMain are `argoexec agent init|main`.
	agentInit, agentMain func(ctx context.Context, o *AgentOptions) error
}

// Run parses args (without the program name) and runs the chosen command.
func Run(ctx context.Context, args []string, stdio IO) error {
	return run(ctx, args, stdio, runners{wait: runWait, init: runInit, resource: resourceRunner(), data: dataRunner(), git: gitRunner(),
		agentInit: agentRunner("init"), agentMain: agentRunner("main")})
}

func run(ctx context.Context, args []string, stdio IO, r runners) error {
	err := cli.Execute(newRootCmd(ctx, stdio, r), args, stdio.Out, stdio.Err)
	if werr := writeTerminationMessage(stdio.TerminationLog, err); werr != nil {
		fmt.Fprintf(stdio.Err, "argoexec: %v\n", werr)
	}
	return err
}

func newRootCmd(ctx context.Context, stdio IO, r runners) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "argoexec",
		Short:         "Workflow executor: stages inputs (init) and collects outputs (wait) in a workflow pod",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	g.addFlags(root.PersistentFlags())
	root.AddCommand(
		newWaitCmd(ctx, g, stdio, r.wait),
		newInitCmd(ctx, g, stdio, r.init),
		newResourceCmd(ctx, g, stdio, r.resource),
		newDataCmd(ctx, g, stdio, r.data),
		newArtifactGitCmd(ctx, g, stdio, r.git),
		newEmissaryCmd(ctx, g, stdio),
		newAgentCmd(ctx, g, stdio, r.agentInit, r.agentMain),
	)
	cli.AddVersion(root, stdio.Out, version.Get().String())
	return root
}
