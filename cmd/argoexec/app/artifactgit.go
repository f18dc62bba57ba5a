package app

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// ArtifactGitOptions are the settings of `argoexec artifact-git`, which
// init runs (in argoexec-main, artifacts.GitCommand) for each git input.
type ArtifactGitOptions struct {
	// Spec is the artifact's git location as JSON (--artifact); it holds
	// no secret, only the names of the secrets.
	Spec string
	// Dest is the new directory to check the repository out in (--dest).
	Dest string
	// SecretsDir is where the secrets the location names are mounted
	// (--secrets-dir).
	SecretsDir string

	// Git is Spec decoded; Log is the command's log. Complete sets both.
	Git *wf.GitArtifact
	Log *logrus.Entry
}

func (o *ArtifactGitOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Spec, "artifact", "", "the artifact's git location, as JSON")
	fs.StringVar(&o.Dest, "dest", "", "the new directory to check the repository out in")
	fs.StringVar(&o.SecretsDir, "secrets-dir", wf.ArgoSecretsPath, "where the secrets the location names are mounted, as DIR/NAME/KEY")
}

// Complete decodes the location and builds the log.
func (o *ArtifactGitOptions) Complete(g *globalOptions, stdio IO) error {
	l, err := g.logger(stdio.Err)
	if err != nil {
		return err
	}
	o.Log = logrus.NewEntry(l).WithField("cmd", "artifact-git")
	o.Git = &wf.GitArtifact{}
	if err := json.Unmarshal([]byte(o.Spec), o.Git); err != nil {
		return usageErrorf("--artifact: not a git location: %v", err)
	}
	return nil
}

// Validate checks the options before any work.
func (o *ArtifactGitOptions) Validate() error {
	if o.Git.Repo == "" || o.Dest == "" {
		return usageErrorf("artifact-git: --artifact with a repo and --dest are required")
	}
	return nil
}

func newArtifactGitCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *ArtifactGitOptions) error) *cobra.Command {
	o := &ArtifactGitOptions{}
	cmd := newStepCmd("artifact-git", "Check a git input artifact out (init runs it, in argoexec-main)", cobra.NoArgs, o.addFlags,
		func([]string) error { return o.Complete(g, stdio) }, o.Validate, func() error {
			if runF == nil {
				return errors.New("artifact-git: not built into this binary")
			}
			return runF(ctx, o)
		})
	cmd.Hidden = true
	return cmd
}
