package podspec

import (
	"errors"
	"fmt"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Our argoexec-step runs one container or script template as one
// pod. A template may carry any field of Argo's (workflow.DecodeTemplate
// accepts them all); for each field a controller acts on, the pod builder
// either applies it to the pod, ignores it because it cannot change what
// one pod run does, or refuses it with an error that names it, says that
// Argo's controller handles it, and what to do instead: never "unknown
// field", and never a setting dropped in silence. Fields lists every
// decision; pkg/podspec/FIELDS.md is the same table for users, generated
// from it (a test keeps the two in step).

// Field is one Argo template field and what argoexec-step does with it.
type Field struct {
	// Path is the field's path in the template, e.g. retryStrategy.
	Path string
	// Handling is Applied, Ignored or Refused.
	Handling Handling
	// Why says what is applied, why ignoring is harmless, or what to do instead.
	Why string
	// set reports whether tmpl sets the field, and where (for a field of a
	// list element, e.g. outputs.parameters[1].valueFrom.jsonPath).
	set func(tmpl *workflow.Template) []string
}

// Handling is what the pod builder does with a field.
type Handling string

// The handlings of a field.
const (
	// Applied fields are copied onto the pod.
	Applied Handling = "applied"
	// Ignored fields are carried in the template annotation and do nothing:
	// they cannot change what one pod run does.
	Ignored Handling = "ignored"
	// Refused fields make Build fail with an error naming them.
	Refused Handling = "refused"
)

// Fields lists the decision for every Argo template field that a
// controller acts on (the container, script, inputs and outputs fields that
// argoexec implements are not listed).
func Fields() []Field {
	return []Field{
		{"nodeSelector", Applied, "pod spec nodeSelector.", when(func(t *workflow.Template) bool { return t.NodeSelector != nil })},
		{"affinity", Applied, "pod spec affinity.", when(func(t *workflow.Template) bool { return t.Affinity != nil })},
		{"tolerations", Applied, "pod spec tolerations.", when(func(t *workflow.Template) bool { return t.Tolerations != nil })},
		{"schedulerName", Applied, "pod spec schedulerName.", when(func(t *workflow.Template) bool { return t.SchedulerName != "" })},
		{"priorityClassName", Applied, "pod spec priorityClassName.", when(func(t *workflow.Template) bool { return t.PriorityClassName != "" })},
		{"priority", Applied, "pod spec priority.", when(func(t *workflow.Template) bool { return t.Priority != nil })},
		{"hostAliases", Applied, "pod spec hostAliases.", when(func(t *workflow.Template) bool { return t.HostAliases != nil })},
		{"securityContext", Applied, "pod spec securityContext: it applies to every container, init and wait included, where the container's own securityContext leaves a field unset. " +
			"init and wait carry Pod Security restricted on their own (README, Pod Security); main's and the sidecars' are the template's: for a restricted namespace set theirs.", when(func(t *workflow.Template) bool { return t.SecurityContext != nil })},
		{"serviceAccountName", Applied, "pod spec serviceAccountName, over --service-account (it needs the backend's RBAC, see manifests/).", when(func(t *workflow.Template) bool { return t.ServiceAccountName != "" })},
		{"automountServiceAccountToken", Refused, "false: init and wait authenticate with the pod's service-account token; drop it (true is accepted).",
			when(func(t *workflow.Template) bool {
				return t.AutomountServiceAccountToken != nil && !*t.AutomountServiceAccountToken
			})},

		{"metrics", Ignored, "Prometheus metrics are emitted by Argo's controller; a pod run has none to emit.", when(func(t *workflow.Template) bool { return t.Metrics != nil })},
		{"memoize", Ignored, "a pod run has no cache: the step always runs.", when(func(t *workflow.Template) bool { return t.Memoize != nil })},
		{"synchronization", Ignored, "locks order the steps of Argo's workflows; argoexec-step run runs one step.", when(func(t *workflow.Template) bool { return t.Synchronization != nil })},
		{"parallelism", Ignored, "bounds the children of a steps or dag template; a container template has none.", when(func(t *workflow.Template) bool { return t.Parallelism != nil })},
		{"failFast", Ignored, "applies to the children of a steps or dag template; a container template has none.", when(func(t *workflow.Template) bool { return t.FailFast != nil })},
		{"outputs.result", Ignored, "filled in on a node by Argo's controller; wait reports the result it reads.", when(func(t *workflow.Template) bool { return t.Outputs.Result != nil })},
		{"outputs.exitCode", Ignored, "filled in on a node by Argo's controller; wait reports the exit code it reads.", when(func(t *workflow.Template) bool { return t.Outputs.ExitCode != nil })},
		{"globalName", Ignored, "exports to a workflow's scope; wait echoes it in the outputs, a pod run has no workflow scope.", globalNames},
		{"inputs.parameters[].enum", Ignored, "Argo's controller checks the value against it on submission.", inputParams(func(p workflow.Parameter) bool { return p.Enum != nil }, "enum")},
		{"inputs.parameters[].description", Ignored, "documentation only.", inputParams(func(p workflow.Parameter) bool { return p.Description != nil }, "description")},

		{"retryStrategy", Refused, "rerun argoexec-step run; or use Argo's controller.", when(func(t *workflow.Template) bool { return t.RetryStrategy != nil })},
		{"timeout", Refused, "use activeDeadlineSeconds, or argoexec-step run --timeout.", when(func(t *workflow.Template) bool { return t.Timeout != "" })},
		{"daemon", Refused, "a daemon step outlives its workflow's step; run the server as a sidecar instead.", when(func(t *workflow.Template) bool { return t.Daemon != nil && *t.Daemon })},
		{"podSpecPatch", Refused, "set the fields in the template, or edit the output of argoexec-step render.", when(func(t *workflow.Template) bool { return t.PodSpecPatch != "" })},
		{"initContainers", Refused, "put the work in main, or use a sidecar.", when(func(t *workflow.Template) bool { return t.InitContainers != nil })},
		{"executor", Refused, "init and wait run as the pod's service account: set serviceAccountName.", when(func(t *workflow.Template) bool { return t.Executor != nil })},
		{"archiveLocation", Refused, "a location there (s3, gcs, artifactory, oss, ...): the repository is the ConfigMap's artifactRepository; drop the location (archiveLocation.archiveLogs alone is applied).",
			when(func(t *workflow.Template) bool { return t.ArchiveLocation != nil && t.ArchiveLocation.Kind() != "" })},
		{"archiveLocation.archiveLogs", Applied, "as Argo's controller: true in artifactRepository.archiveLogs wins, else the template's value; wait then saves main's log to the repository as main.log beside the step's artifacts and reports it as the output artifact main-logs.",
			when(func(t *workflow.Template) bool {
				return t.ArchiveLocation != nil && t.ArchiveLocation.ArchiveLogs != nil
			})},
		{"steps", Refused, "argoexec-step run runs one container or script template: run each step's template.", when(func(t *workflow.Template) bool { return t.Steps != nil })},
		{"dag", Refused, "argoexec-step run runs one container or script template: run each task's template.", when(func(t *workflow.Template) bool { return t.DAG != nil })},
		{"suspend", Refused, "argoexec-step run runs one container or script template.", when(func(t *workflow.Template) bool { return t.Suspend != nil })},
		{"resource", Refused, "resource templates run `argoexec resource` as main under Argo's controller.", when(func(t *workflow.Template) bool { return t.Resource != nil })},
		{"data", Refused, "data templates run `argoexec data` as main under Argo's controller.", when(func(t *workflow.Template) bool { return t.Data != nil })},
		{"containerSet", Refused, "use one container, or sidecars.", when(func(t *workflow.Template) bool { return t.ContainerSet != nil })},
		{"http", Refused, "HTTP templates are run by Argo's agent; use a container running curl.", when(func(t *workflow.Template) bool { return t.HTTP != nil })},
		{"plugin", Refused, "plugin templates are run by Argo's executor plugins.", when(func(t *workflow.Template) bool { return t.Plugin != nil })},
		{"outputs.parameters[].valueFrom", Refused, "wait reads valueFrom.path (and valueFrom.default); jsonPath, jqFilter, event, parameter, supplied, configMapKeyRef and expression are resolved by Argo's controller or resource templates.", valueFromSources},
		{"artifacts[]", Refused, "from, fromExpression, subPath, mode, recurseMode, archiveLogs and archive.zip are not implemented by init and wait under argoexec-step; from and fromExpression are resolved by Argo's controller.", artifactFields},
		{"artifacts[].hdfs", Refused, "argoexec has no hdfs store (no HDFS server can be run where it is tested): store the artifact in an S3-compatible bucket instead (the repository's s3, or the artifact's own s3 location; a step that copies it between HDFS and S3 with Hadoop's own client can bridge the two), or run this workflow with Argo's own argoexec image.", hdfsArtifacts},
		{"outputs.artifacts[].git", Refused, "git artifacts are inputs only, as in Argo: save the output to the repository (leave its location out) or to an artifactory, oss or s3 location.", gitOutputs},
	}
}

// when adapts a whole-template test to Field.set.
func when(f func(*workflow.Template) bool) func(*workflow.Template) []string {
	return func(t *workflow.Template) []string {
		if f(t) {
			return []string{""}
		}
		return nil
	}
}

func globalNames(t *workflow.Template) []string {
	var at []string
	for i, p := range t.Outputs.Parameters {
		if p.GlobalName != "" {
			at = append(at, fmt.Sprintf("outputs.parameters[%d].globalName", i))
		}
	}
	for i, a := range t.Outputs.Artifacts {
		if a.GlobalName != "" {
			at = append(at, fmt.Sprintf("outputs.artifacts[%d].globalName", i))
		}
	}
	return at
}

func inputParams(f func(workflow.Parameter) bool, name string) func(*workflow.Template) []string {
	return func(t *workflow.Template) []string {
		var at []string
		for i, p := range t.Inputs.Parameters {
			if f(p) {
				at = append(at, fmt.Sprintf("inputs.parameters[%d].%s", i, name))
			}
		}
		return at
	}
}

func valueFromSources(t *workflow.Template) []string {
	var at []string
	for i, p := range t.Outputs.Parameters {
		v := p.ValueFrom
		if v == nil {
			continue
		}
		for _, s := range []struct {
			name string
			set  bool
		}{
			{"jsonPath", v.JSONPath != ""}, {"jqFilter", v.JQFilter != ""}, {"event", v.Event != ""},
			{"parameter", v.Parameter != ""}, {"supplied", v.Supplied != nil}, {"configMapKeyRef", v.ConfigMapKeyRef != nil},
			{"expression", v.Expression != ""},
		} {
			if s.set {
				at = append(at, fmt.Sprintf("outputs.parameters[%d].valueFrom.%s", i, s.name))
			}
		}
	}
	return at
}

func artifactFields(t *workflow.Template) []string {
	var at []string
	check := func(key string, arts []workflow.Artifact) {
		for i, a := range arts {
			for _, s := range []struct {
				name string
				set  bool
			}{
				{"from", a.From != ""}, {"fromExpression", a.FromExpression != ""}, {"subPath", a.SubPath != ""},
				{"mode", a.Mode != nil}, {"recurseMode", a.RecurseMode}, {"archiveLogs", a.ArchiveLogs != nil},
				{"archive.zip", a.Archive != nil && a.Archive.Zip != nil},
			} {
				if s.set {
					at = append(at, fmt.Sprintf("%s.artifacts[%d].%s", key, i, s.name))
				}
			}
		}
	}
	check("inputs", t.Inputs.Artifacts)
	check("outputs", t.Outputs.Artifacts)
	return at
}

func hdfsArtifacts(t *workflow.Template) []string {
	var at []string
	for _, list := range []struct {
		key  string
		arts []workflow.Artifact
	}{{"inputs", t.Inputs.Artifacts}, {"outputs", t.Outputs.Artifacts}} {
		for i, a := range list.arts {
			if a.HDFS != nil {
				at = append(at, fmt.Sprintf("%s.artifacts[%d].hdfs", list.key, i))
			}
		}
	}
	return at
}

func gitOutputs(t *workflow.Template) []string {
	var at []string
	for i, a := range t.Outputs.Artifacts {
		if a.Git != nil {
			at = append(at, fmt.Sprintf("outputs.artifacts[%d].git", i))
		}
	}
	return at
}

// checkRepositoryKind refuses an s3 or gcs artifact of another kind than the
// ConfigMap's repository: the pod holds only the repository's credentials
// for those, and only its bucket is allowed (git, artifactory and oss
// artifacts bring their own secrets, which the pod builder mounts). It
// also refuses archiveLogs without a repository to save the log to, and an
// output that takes the log's name.
func checkRepositoryKind(repo workflow.ArtifactRepository, t *workflow.Template) error {
	var errs []error
	check := func(key string, arts []workflow.Artifact) {
		for i, a := range arts {
			switch {
			case a.GCS != nil && repo.GCS == nil:
				errs = append(errs, fmt.Errorf("%s.artifacts[%d].gcs: the ConfigMap's artifactRepository is not gcs, and argoexec-step pods hold only the repository's credentials; set artifactRepository.gcs, or use the repository's kind", key, i))
			case a.S3 != nil && repo.S3 == nil && repo.GCS != nil:
				errs = append(errs, fmt.Errorf("%s.artifacts[%d].s3: the ConfigMap's artifactRepository is gcs, and argoexec-step pods hold only the repository's credentials; use gcs", key, i))
			}
		}
	}
	check("inputs", t.Inputs.Artifacts)
	check("outputs", t.Outputs.Artifacts)
	if t.SaveLogsAsArtifact() {
		if repo.S3 == nil && repo.GCS == nil && repo.Artifactory == nil && repo.OSS == nil {
			errs = append(errs, errors.New("archiveLocation.archiveLogs: main's log is saved to the artifact repository, and the ConfigMap has none: set artifactRepository.s3 (or gcs, artifactory or oss), or drop archiveLogs"))
		}
		for i, a := range t.Outputs.Artifacts {
			if a.Name == workflow.MainLogsArtifactName {
				errs = append(errs, fmt.Errorf("outputs.artifacts[%d].name: %q is the artifact archiveLogs reports main's log as: rename the output, or drop archiveLogs", i, a.Name))
			}
		}
	}
	return errors.Join(errs...)
}

// refuseUnsupported returns one error per refused field that t sets, each
// naming the field, and the paths of the ignored fields it sets.
func refuseUnsupported(t *workflow.Template) (ignored []string, err error) {
	var errs []error
	for _, f := range Fields() {
		for _, at := range f.set(t) {
			if at == "" {
				at = f.Path
			}
			switch f.Handling {
			case Refused:
				errs = append(errs, fmt.Errorf("%s: not supported by argoexec-step run; Argo's controller handles it (%s)", at, f.Why))
			case Ignored:
				ignored = append(ignored, at)
			}
		}
	}
	return ignored, errors.Join(errs...)
}
