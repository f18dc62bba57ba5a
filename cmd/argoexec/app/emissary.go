package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/argoexec/argoexec/executor/emissary/wrapper"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// EmissaryOptions are the settings of `argoexec emissary -- CMD ARGS...`,
// the wrapper Argo's controller puts in front of every non-wait container's
// command when the executor is emissary.
type EmissaryOptions struct {
	// Root is the shared volume (--var-run-argo, hidden; /var/run/argo).
	Root string
	// Config is the wrapper's, completed from the arguments and environment.
	Config wrapper.Config
	// Exit ends the process with the wrapper's exit code, which must be the
	// child's: the kubelet reports it as main's, and neither Argo's nor our
	// controller reads any other. os.Exit in argoexec; tests replace it. It
	// is called only for a code other than 0, after everything has run.
	Exit func(int)
	// Environ is the child's environment (os.Environ in argoexec).
	Environ func() []string
	// TerminationLog is where the wrapper's own failure is written, as
	// Argo's argoexec writes it; the child's exit is never written there
	// (the file may hold the user's own termination message).
	TerminationLog string
}

// Complete fills the options from the arguments after `--` and the
// environment. The template is read by the wrapper from Root/template
// (argoexec init writes it); when that file does not exist, from the file
// ARGO_TEMPLATE_PATH names (argoexec-step's pods without init), else from
// ARGO_TEMPLATE.
func (o *EmissaryOptions) Complete(args []string, stdio IO) error {
	if o.Exit == nil {
		o.Exit = os.Exit
	}
	if o.Environ == nil {
		o.Environ = os.Environ
	}
	o.TerminationLog = stdio.TerminationLog
	o.Config.Root = o.Root
	o.Config.Name = stdio.Getenv(wf.EnvArgoContainerName)
	o.Config.Command = args
	o.Config.IncludeScriptOutput = stdio.Getenv("ARGO_INCLUDE_SCRIPT_OUTPUT") == "true"
	_, o.Config.DebugPauseBefore = lookupEnv(stdio, "ARGO_DEBUG_PAUSE_BEFORE")
	_, o.Config.DebugPauseAfter = lookupEnv(stdio, "ARGO_DEBUG_PAUSE_AFTER")
	o.Config.Env = o.Environ()
	o.Config.Stdout, o.Config.Stderr = stdio.Out, stdio.Err
	if _, err := os.Stat(filepath.Join(o.Root, "template")); errors.Is(err, fs.ErrNotExist) {
		var js []byte
		switch p := stdio.Getenv(wf.EnvTemplatePath); {
		case p != "":
			// argoexec-step's pods without init (the executor image
			// mounted as a volume): the template annotation, projected.
			if js, err = os.ReadFile(p); err != nil {
				return fmt.Errorf("emissary: read the template from %s (%s): %w", p, wf.EnvTemplatePath, err)
			}
		default:
			js = []byte(stdio.Getenv(wf.EnvArgoTemplate))
		}
		if len(js) > 0 {
			t, err := wf.DecodeTemplate(js)
			if err != nil {
				return usageErrorf("emissary: the template (%s or %s): %v", wf.EnvTemplatePath, wf.EnvArgoTemplate, err)
			}
			o.Config.Template = t
		}
	}
	return nil
}

// lookupEnv says whether name is set; IO only has Getenv, and Argo's
// debug pauses are on when the variable is set at all.
func lookupEnv(stdio IO, name string) (string, bool) {
	v := stdio.Getenv(name)
	if v != "" {
		return v, true
	}
	_, ok := os.LookupEnv(name)
	return v, ok
}

// Validate checks the options before any work. A missing container name or
// command is not refused here: the wrapper must still write the exit code
// file (64) so that wait does not wait forever, and it says what is missing.
func (o *EmissaryOptions) Validate() error {
	if o.Root == "" {
		return usageErrorf("emissary: --var-run-argo is empty")
	}
	return nil
}

// Run runs the wrapper. Signals the process receives are forwarded to the
// child's process group rather than ending it: ctx's cancellation (main's
// SIGTERM context) is cut off for that reason.
func (o *EmissaryOptions) Run(ctx context.Context, g *globalOptions) error {
	l, err := g.logger(o.Config.Stderr)
	if err != nil {
		return err
	}
	log := l.WithField("container", o.Config.Name).WithField("cmd", "emissary")
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	defer signal.Stop(sigs)
	o.Config.Signals = sigs
	code, err := wrapper.Run(context.WithoutCancel(ctx), o.Config, log)
	if err != nil {
		log.WithError(err).Error("emissary failed")
		if werr := writeTerminationMessage(o.TerminationLog, err); werr != nil {
			log.WithError(werr).Warn("write the termination message")
		}
	}
	if code != 0 {
		signal.Stop(sigs)
		o.Exit(code)
	}
	return nil
}

func newEmissaryCmd(ctx context.Context, g *globalOptions, stdio IO) *cobra.Command {
	return newEmissaryCmdExit(ctx, g, stdio, nil)
}

// newEmissaryCmdExit is newEmissaryCmd with the exit replaced (nil: os.Exit).
func newEmissaryCmdExit(ctx context.Context, g *globalOptions, stdio IO, exit func(int)) *cobra.Command {
	o := &EmissaryOptions{Exit: exit}
	cmd := &cobra.Command{
		Use:   "emissary -- CMD [ARGS...]",
		Short: "Run CMD as a child under Argo's emissary protocol: forward signals to it, keep its output and outputs on /var/run/argo, write its exit code last",
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.Complete(args, stdio); err != nil {
				return wrapRun(err)
			}
			if err := o.Validate(); err != nil {
				return wrapRun(err)
			}
			return wrapRun(o.Run(ctx, g))
		},
	}
	cmd.Flags().StringVar(&o.Root, "var-run-argo", wf.VarRunArgoPath, "the volume shared with wait (for tests)")
	_ = cmd.Flags().MarkHidden("var-run-argo")
	return cmd
}
