//go:build argoexec_main

package app

import (
	"context"

	"github.com/argoexec/argoexec/pkg/artifacts"
	"github.com/argoexec/argoexec/pkg/artifacts/git"
)

// gitRunner is, in argoexec-main, the git checkout itself.
func gitRunner() func(context.Context, *ArtifactGitOptions) error { return runArtifactGit }

func runArtifactGit(ctx context.Context, o *ArtifactGitOptions) error {
	return git.Load(ctx, o.Git, artifacts.SecretFiles{Root: o.SecretsDir}, o.Dest, o.Log)
}
