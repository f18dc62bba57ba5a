package app

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// DataOptions are the settings of `argoexec data`.
type DataOptions struct{ mainOptions }

// Complete fills the options from the environment. The argument Argo's
// controller passes (the data field as JSON) is ignored, as Argo's argoexec
// ignores it: the template comes from the environment.
func (o *DataOptions) Complete(g *globalOptions, stdio IO) error { return o.complete("data", g, stdio) }

// Validate checks the options before any work.
func (o *DataOptions) Validate() error { return o.validate("data") }

func newDataCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *DataOptions) error) *cobra.Command {
	o := &DataOptions{}
	return newStepCmd("data [JSON]", "Run a data template: list its source.artifactPaths in S3, apply its transformations, report the result", cobra.ArbitraryArgs, o.addFlags,
		func(args []string) error { return o.Complete(g, stdio) }, o.Validate, func() error { return runF(ctx, o) })
}

// dataRepository is the repository an incomplete artifactPaths location is
// relocated onto, and where the S3 keys come from: under Argo's controller
// the template's archiveLocation and the secret files it mounts in main
// (/argo/secret/NAME/KEY), under ours the ConfigMap's repository and keys.
func (o *DataOptions) dataRepository(tmpl *wf.Template) (*wf.S3Bucket, artifacts.Credentials, error) {
	if o.Protocol == protocolArgo {
		var repo *wf.S3Bucket
		if tmpl.ArchiveLocation != nil && tmpl.ArchiveLocation.S3 != nil {
			b := tmpl.ArchiveLocation.S3.S3Bucket
			repo = &b
		}
		return repo, artifacts.SecretFiles{Root: wf.ArgoSecretsPath}, nil
	}
	creds := artifacts.StaticKeys{AccessKey: o.S3AccessKey, SecretKey: o.S3SecretKey}
	if o.ArtifactRepository == "" {
		return nil, creds, nil
	}
	r := &wf.ArtifactRepository{}
	if err := json.Unmarshal([]byte(o.ArtifactRepository), r); err != nil {
		return nil, nil, usageErrorf("%s is not an artifact repository: %v", wf.EnvArtifactRepository, err)
	}
	if r.S3 == nil {
		return nil, creds, nil
	}
	b := r.S3.S3Bucket
	return &b, creds, nil
}
