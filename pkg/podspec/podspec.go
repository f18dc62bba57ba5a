// Package podspec builds the pod of one workflow step from the controller's
// configuration and the step's template: main, the argoexec init and wait
// containers, user sidecars, and what the chosen container runtime executor
// needs. Build is pure: same inputs, same pod.
package podspec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// AnnotationDefaultContainer makes `kubectl logs` and `kubectl exec` pick main.
const AnnotationDefaultContainer = "kubectl.kubernetes.io/default-container"

// Meta is what the pod builder needs to know about the pod besides the
// template: its identity, the workflow it belongs to and where it runs.
type Meta struct {
	// PodName is the pod's name (required).
	PodName string
	// Namespace is the pod's namespace; empty leaves it to the client.
	Namespace string
	// WorkflowName is the workflow the pod belongs to; empty means PodName.
	WorkflowName string
	// WorkflowLabels are the workflow's labels, matched by config.Select.
	WorkflowLabels map[string]string
	// ServiceAccountName is the pod's service account (it needs the RBAC
	// of the chosen backend, see manifests/); empty means "default".
	ServiceAccountName string
	// NodeName pins the pod to a node; empty lets the scheduler choose.
	NodeName string
}

// Build returns the pod that runs tmpl with the executor that cfg selects
// for meta.WorkflowLabels, one of backends (the binary's registered
// backends; the selected one shapes the pod). It substitutes input
// parameters, carries the template to init and wait in a pod annotation
// projected as a file, and refuses what the selected backend cannot do and
// the Argo fields that argoexec-step does not implement (see Fields).
func Build(cfg *config.Config, backends []Backend, tmpl *workflow.Template, meta Meta) (*corev1.Pod, error) {
	pod, err := build(cfg, backends, tmpl, meta)
	if err != nil {
		return nil, fmt.Errorf("build pod %s: %w", meta.PodName, err)
	}
	return pod, nil
}

func build(cfg *config.Config, backends []Backend, tmpl *workflow.Template, meta Meta) (*corev1.Pod, error) {
	if err := meta.validate(); err != nil {
		return nil, err
	}
	if meta.WorkflowName == "" {
		meta.WorkflowName = meta.PodName
	}
	name, err := cfg.Select(meta.WorkflowLabels, configBackends(backends))
	if err != nil {
		return nil, err
	}
	backend, err := find(backends, name)
	if err != nil {
		return nil, err
	}
	t, err := SubstituteInputs(tmpl)
	if err != nil {
		return nil, err
	}
	if err := validateTemplate(t); err != nil {
		return nil, err
	}
	t = withArchiveLogs(cfg.ArtifactRepository, t)
	if err := checkRepositoryKind(cfg.ArtifactRepository, t); err != nil {
		return nil, err
	}
	if err := checkOutputsReachable(backend, backends, t); err != nil {
		return nil, err
	}
	tmplJSON, err := templateJSON(withoutScriptSource(t))
	if err != nil {
		return nil, err
	}
	b := &builder{cfg: cfg, tmpl: t, meta: meta, backend: backend}
	pod := b.pod(tmplJSON)
	if err := backend.Shape(cfg, pod); err != nil {
		return nil, err
	}
	if err := checkBackendVolumes(t, backend, pod); err != nil {
		return nil, err
	}
	if err := checkAnnotationBudget(pod.Annotations); err != nil {
		return nil, err
	}
	return pod, nil
}

// withArchiveLogs is t with the archiveLogs that Argo's controller would
// give it (IsArchiveLogs: the repository's true wins, else the template's
// archiveLocation.archiveLogs) written into its archiveLocation, where
// wait reads it (Template.SaveLogsAsArtifact) under either controller.
func withArchiveLogs(repo workflow.ArtifactRepository, t *workflow.Template) *workflow.Template {
	if repo.ArchiveLogs == nil || !*repo.ArchiveLogs {
		return t
	}
	c := *t
	yes := true
	c.ArchiveLocation = &workflow.ArtifactLocation{ArchiveLogs: &yes}
	return &c
}

// checkBackendVolumes refuses a template volume whose name a backend's
// Shape gave one of its own.
func checkBackendVolumes(t *workflow.Template, backend Backend, pod *corev1.Pod) error {
	var errs []error
	for i, v := range t.Volumes {
		n := 0
		for _, pv := range pod.Spec.Volumes {
			if pv.Name == v.Name {
				n++
			}
		}
		if n > 1 {
			errs = append(errs, fmt.Errorf("volumes[%d].name: %q is reserved for the pod builder (a volume it or the %s executor adds: rename it)", i, v.Name, backend.Name()))
		}
	}
	return errors.Join(errs...)
}

func (m Meta) validate() error {
	var errs []error
	if m.PodName == "" {
		errs = append(errs, errors.New("pod name is empty"))
	} else if msgs := validation.IsDNS1123Subdomain(m.PodName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("pod name %q: %s", m.PodName, strings.Join(msgs, "; ")))
	}
	if m.WorkflowName != "" {
		if msgs := validation.IsValidLabelValue(m.WorkflowName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("workflow name %q is not a label value: %s", m.WorkflowName, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

// builder holds the inputs of one Build while it assembles the pod.
type builder struct {
	cfg     *config.Config
	tmpl    *workflow.Template
	meta    Meta
	backend Backend
}

func (b *builder) pod(tmplJSON string) *corev1.Pod {
	main := b.mainContainer()
	var initCtrs []corev1.Container
	if needsInit(b.cfg, b.tmpl, b.backend) {
		initCtrs = append(initCtrs, b.initContainer())
	}
	ctrs := []corev1.Container{main, b.waitContainer()}
	sidecars := b.sidecars()
	if b.cfg.SidecarMode == workflow.SidecarModeLegacy {
		ctrs = append(ctrs, sidecars...)
	} else {
		initCtrs = append(initCtrs, sidecars...)
	}
	sa := b.meta.ServiceAccountName
	if b.tmpl.ServiceAccountName != "" {
		sa = b.tmpl.ServiceAccountName
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        b.meta.PodName,
			Namespace:   b.meta.Namespace,
			Labels:      b.labels(),
			Annotations: b.annotations(tmplJSON),
		},
		Spec: corev1.PodSpec{
			RestartPolicy:         corev1.RestartPolicyNever,
			ServiceAccountName:    sa,
			NodeName:              b.meta.NodeName,
			ActiveDeadlineSeconds: b.tmpl.ActiveDeadlineSeconds,
			InitContainers:        initCtrs,
			Containers:            ctrs,
			Volumes:               b.volumes(),
			// The template's scheduling and pod-level fields (see Fields).
			NodeSelector:      b.tmpl.NodeSelector,
			Affinity:          b.tmpl.Affinity,
			Tolerations:       b.tmpl.Tolerations,
			SchedulerName:     b.tmpl.SchedulerName,
			PriorityClassName: b.tmpl.PriorityClassName,
			Priority:          b.tmpl.Priority,
			HostAliases:       b.tmpl.HostAliases,
			SecurityContext:   b.tmpl.SecurityContext,
		},
	}
}

func (b *builder) labels() map[string]string {
	l := maps.Clone(b.tmpl.Metadata.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[workflow.LabelWorkflow] = b.meta.WorkflowName
	return l
}

func (b *builder) annotations(tmplJSON string) map[string]string {
	a := maps.Clone(b.tmpl.Metadata.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	a[workflow.AnnotationTemplate] = tmplJSON
	if s := b.tmpl.Script; s != nil {
		a[workflow.AnnotationScript] = s.Source
	}
	a[AnnotationDefaultContainer] = workflow.MainContainerName
	return a
}

// IgnoredFields lists the fields tmpl sets that Build accepts and
// ignores (Fields says why each is harmless), for the controller to log.
func IgnoredFields(tmpl *workflow.Template) []string {
	ignored, _ := refuseUnsupported(tmpl)
	return ignored
}

// needsInit says whether init has work: loading input artifacts, or the
// backend's own (Backend.NeedsInit). A script's source reaches main
// through the ScriptVolume, and input parameters are substituted at render
// time, so neither needs init.
func needsInit(cfg *config.Config, t *workflow.Template, backend Backend) bool {
	return len(t.Inputs.Artifacts) > 0 || backend.NeedsInit(cfg)
}

// withoutScriptSource is t as the template annotation carries it: a
// script's source is in its own annotation (AnnotationScript), which main
// reads, and init and wait do not need it.
func withoutScriptSource(t *workflow.Template) *workflow.Template {
	if t.Script == nil || t.Script.Source == "" {
		return t
	}
	c := *t
	s := *t.Script
	s.Source = ""
	c.Script = &s
	return &c
}

// checkAnnotationBudget fails when the pod's annotations exceed what the API
// server accepts, naming the template as the likely cause.
func checkAnnotationBudget(annotations map[string]string) error {
	total := 0
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		total += len(k) + len(annotations[k])
	}
	if total <= workflow.MaxAnnotationBytes {
		return nil
	}
	return fmt.Errorf("template is %d bytes as JSON, its script's source %d bytes, and the pod's annotations total %d bytes, over the API server's limit of %d: "+
		"move large data (a script's source, parameter values) into an input artifact",
		len(annotations[workflow.AnnotationTemplate]), len(annotations[workflow.AnnotationScript]), total, workflow.MaxAnnotationBytes)
}
