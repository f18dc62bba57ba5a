// Package data runs Argo's data templates (`argoexec data`). It is built
// into its own binary, argoexec-main (cmd/argoexec, build tag
// argoexec_main): expr-lang/expr looks methods up by name through
// reflection, which keeps the linker from dropping any method of any type,
// so linking it into argoexec made every wait 12 MiB bigger.
package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Reporter publishes the outputs (argo.TaskResultReporter under Argo's
// controller, report.PodReporter under ours).
type Reporter interface {
	Report(ctx context.Context, outputs *wf.NodeOutputs) error
}

// ObjectLister lists the keys of the objects under an artifact's location
// (artifacts.S3.List).
type ObjectLister interface {
	List(ctx context.Context, art wf.Artifact) ([]string, error)
}

// Executor runs a data template (`argoexec data`) as Argo v3.3.8 does:
// it lists the keys under source.artifactPaths, applies each
// transformation's expression (expr-lang/expr, with the value so far bound
// to `data`, e.g. `filter(data, {# endsWith "main.log"})`), and reports the
// JSON of the final value as outputs.result, beside the template's declared
// outputs.
type Executor struct {
	// Template is the data template.
	Template *wf.Template
	// Repository fills an artifactPaths location that is not complete
	// (endpoint, bucket and key), as Argo relocates it onto the template's
	// archiveLocation: everything but the key is the repository's. Nil
	// makes an incomplete location an error.
	Repository *wf.S3Bucket
	// Lister lists S3 keys.
	Lister ObjectLister
	// Reporter reports the outputs.
	Reporter Reporter
	// Log is the command's logger.
	Log *logrus.Entry
}

// Run lists, transforms and reports.
func (d *Executor) Run(ctx context.Context) error {
	if d.Template == nil || d.Template.Data == nil {
		return errors.New("the template is not a data template (it has no data field): argoexec data runs data templates only")
	}
	data := d.Template.Data
	if data.Source.ArtifactPaths == nil {
		return errors.New("data template: no valid source is used for data template: set source.artifactPaths")
	}
	files, err := d.listArtifactPaths(ctx, data.Source.ArtifactPaths.Artifact)
	if err != nil {
		return fmt.Errorf("data template: unable to source artifact paths: %w", err)
	}
	d.Log.Infof("source.artifactPaths: %d keys", len(files))
	var value any = files
	for i, step := range data.Transformation {
		if step.Expression == "" {
			return fmt.Errorf("data template: transformation step %d has no expression: expression is the only transformation argoexec (and Argo v3.3.8) knows", i)
		}
		value, err = expr.Eval(step.Expression, map[string]any{"data": value})
		if err != nil {
			return fmt.Errorf("data template: error processing data step %d (%s): %w", i, step.Expression, err)
		}
	}
	out, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("data template: encode the result as JSON: %w", err)
	}
	result := string(out)
	outputs := &wf.NodeOutputs{
		Parameters: d.Template.Outputs.Parameters,
		Artifacts:  d.Template.Outputs.Artifacts,
		Result:     &result,
	}
	d.Log.Infof("result: %d bytes", len(result))
	if err := d.Reporter.Report(ctx, outputs); err != nil {
		return fmt.Errorf("data template: report the result: %w", err)
	}
	return nil
}

// listArtifactPaths lists an S3 source; every other artifact kind is an
// error naming it.
func (d *Executor) listArtifactPaths(ctx context.Context, art wf.Artifact) ([]string, error) {
	if art.S3 == nil {
		kind := artifactKind(art)
		return nil, fmt.Errorf("source.artifactPaths %q is a %s artifact: argoexec lists S3 artifacts only; put the files in S3, or list them in a container template", art.Name, kind)
	}
	loc := *art.S3
	if loc.Endpoint == "" || loc.Bucket == "" || loc.Key == "" {
		// Argo's Relocate: an incomplete location is the repository's, with the artifact's key.
		if d.Repository == nil {
			return nil, fmt.Errorf("source.artifactPaths %q: template artifact location not set: give the artifact endpoint, bucket and key, or configure an artifact repository", art.Name)
		}
		loc = wf.S3Artifact{S3Bucket: *d.Repository, Key: art.S3.Key}
	}
	art.S3 = &loc
	return d.Lister.List(ctx, art)
}

// artifactKind names the location kind an artifact has, for messages.
func artifactKind(a wf.Artifact) string {
	if k := a.Location().Kind(); k != "" {
		return k
	}
	return "location-less"
}
