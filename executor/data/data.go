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
	"reflect"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/sirupsen/logrus"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// Reporter publishes the outputs (argo.TaskResultReporter under Argo's
// controller, report.PodReporter under ours).
type Reporter interface {
	Report(ctx context.Context, outputs *wf.NodeOutputs) error
}

// ObjectLister lists the keys of the objects under an artifact's location.
// A store driver that can list implements it (artifacts.S3 does); KindLister
// finds it through the artifact seam.
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
	// Repository is the template's archiveLocation (Argo's controller) or
	// the ConfigMap's repository (ours): as Argo's Relocate, an
	// artifactPaths location with no key, or nothing but its key, is the
	// repository's with that key. Nil makes such a location an error.
	Repository *wf.ArtifactLocation
	// Lister lists the keys, in the store of the location's kind.
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

// listArtifactPaths relocates the source onto the repository when it
// names no more than a key (Argo's Relocate), then lists it.
func (d *Executor) listArtifactPaths(ctx context.Context, art wf.Artifact) ([]string, error) {
	loc := art.Location()
	loc.ArchiveLogs = nil
	if key, err := loc.Key(); err == nil && onlyKey(loc, key) {
		if d.Repository == nil || d.Repository.Kind() == "" {
			return nil, fmt.Errorf("source.artifactPaths %q: template artifact location not set: its %s location names no more than a key; give the artifact its whole location (e.g. s3 endpoint, bucket and key), or configure an artifact repository", art.Name, artifactKind(art))
		}
		repo := *d.Repository
		repo.ArchiveLogs = nil
		at, err := repo.WithKey(key)
		if err != nil {
			return nil, fmt.Errorf("source.artifactPaths %q: relocate onto the artifact repository: %w", art.Name, err)
		}
		art.SetLocation(at)
	}
	return d.Lister.List(ctx, art)
}

// onlyKey says whether loc, whose key is key, names nothing else: no key
// at all (Argo's data example gives a bucket alone), or a location equal
// to its kind's key-only one (workflow.ArtifactLocation.KeyOnly).
func onlyKey(loc wf.ArtifactLocation, key string) bool {
	if key == "" {
		return true
	}
	bare, err := loc.KeyOnly(key)
	return err == nil && reflect.DeepEqual(bare, loc)
}

// artifactKind names the location kind an artifact has, for messages.
func artifactKind(a wf.Artifact) string {
	if k := a.Location().Kind(); k != "" {
		return k
	}
	return "location-less"
}

// KindLister lists through the driver of the artifact's location kind,
// built by that kind's artifacts.Kind from Env, as the flows build their
// stores: a store is listable when its driver implements ObjectLister, and
// no case here names one. Argo v3.3.8 lists s3, gcs and oss sources.
type KindLister struct {
	// Env is the environment each kind's driver is built from (the
	// protocol's repository and credentials for that kind).
	Env func(kind string) artifacts.Env
	// Allow checks an s3 location before it is listed, as the flows'
	// store does (artifacts.StoreConfig.Allow); nil allows any.
	Allow artifacts.BucketPolicy
}

// List implements ObjectLister.
func (k KindLister) List(ctx context.Context, art wf.Artifact) ([]string, error) {
	kind := art.Location().Kind()
	var listable []string
	var lister ObjectLister
	for _, kd := range artifacts.Kinds() {
		d, err := kd.New(k.Env(kd.Name))
		if err != nil {
			return nil, fmt.Errorf("%s store: %w", kd.Name, err)
		}
		l, ok := d.(ObjectLister)
		if ok {
			listable = append(listable, kd.Name)
		}
		if kd.Name == kind {
			lister = l
		}
	}
	if lister == nil {
		return nil, fmt.Errorf("source.artifactPaths %q: listing its %s location is %w: argoexec lists %s sources (Argo v3.3.8 lists s3, gcs and oss); put the files there, or list them in a container template",
			art.Name, artifactKind(art), artifacts.ErrNotSupported, strings.Join(listable, ", "))
	}
	if art.S3 != nil && k.Allow != nil {
		if err := k.Allow(art.S3); err != nil {
			return nil, err
		}
	}
	return lister.List(ctx, art)
}
