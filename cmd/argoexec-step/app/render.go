package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/executor/backends"
	"github.com/argoexec/argoexec/executor/emissary"
	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
	"github.com/argoexec/argoexec/pkg/podspec"
)

// defaultServiceAccount is the service account that manifests/ creates.
const defaultServiceAccount = "argoexec"

// RenderOptions are the inputs of one step's pod: template, ConfigMap,
// workflow labels and the pod's identity.
type RenderOptions struct {
	// TemplateFile is the template, YAML or JSON.
	TemplateFile string
	// ConfigMapFile is the ConfigMap manifest or bare config YAML.
	ConfigMapFile string
	// Labels are the workflow's labels as key=value.
	Labels []string
	// Params override input parameter values, as name=value.
	Params []string
	// Name is the pod (and workflow) name; empty means the template's name.
	Name string
	// Namespace is the pod's namespace.
	Namespace string
	// ServiceAccount is the pod's service account.
	ServiceAccount string

	// Filled by Complete.
	labels   map[string]string
	params   map[string]string
	template *workflow.Template
	config   *config.Config
}

func (o *RenderOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TemplateFile, "template", "", "template file, YAML or JSON (required); an Argo Workflow gives its entrypoint template")
	fs.StringVar(&o.ConfigMapFile, "configmap", "", "workflow-controller-configmap manifest, or the bare config YAML (required)")
	fs.StringArrayVar(&o.Labels, "label", nil, "workflow label key=value (repeatable); picks the executor by label or selector")
	fs.StringArrayVarP(&o.Params, "param", "p", nil, "input parameter name=value (repeatable); overrides the template's value")
	fs.StringVar(&o.Name, "name", "", "pod and workflow name (default: the template's name)")
	fs.StringVar(&o.Namespace, "namespace", "", "pod namespace")
	fs.StringVar(&o.ServiceAccount, "service-account", defaultServiceAccount, "service account of the pod (needs the backend's RBAC, see manifests/)")
}

// Complete parses the labels and parameters; it reads no file.
func (o *RenderOptions) Complete() error {
	var err error
	if o.labels, err = keyValues("--label", o.Labels); err != nil {
		return err
	}
	o.params, err = keyValues("--param", o.Params)
	return err
}

func keyValues(flag string, list []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("%s %q: want key=value", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

// Validate checks that the required flags are set.
func (o *RenderOptions) Validate() error {
	if o.TemplateFile == "" {
		return usageErrorf("--template is required")
	}
	if o.ConfigMapFile == "" {
		return usageErrorf("--configmap is required")
	}
	return nil
}

// load reads and checks the template and the configuration; a bad file is
// a usage error: nothing has been done yet. It logs the keys of Argo's
// ConfigMap and the template fields that argoexec-step accepts and
// ignores, so that nothing is dropped unsaid.
func (o *RenderOptions) load(log *logrus.Entry) error {
	data, err := os.ReadFile(o.TemplateFile)
	if err != nil {
		return usageErrorf("read template: %w", err)
	}
	tmpl, wfLabels, wfName, isWorkflow, err := fromWorkflow(data)
	if err != nil {
		return usageErrorf("%s: %w", o.TemplateFile, err)
	}
	if isWorkflow {
		// An Argo Workflow: its entrypoint template, under its labels
		// (a --label wins), which may pick the executor.
		data = tmpl
		for k, v := range wfLabels {
			if _, set := o.labels[k]; !set {
				o.labels[k] = v
			}
		}
		log.WithField("workflow", wfName).Info("template: the Workflow's entrypoint template")
	}
	if o.template, err = workflow.DecodeTemplate(data); err != nil {
		return usageErrorf("%s: %w", o.TemplateFile, err)
	}
	if o.config, err = config.LoadFile(o.ConfigMapFile, backends.All().Config()); err != nil {
		return &UsageError{Err: err}
	}
	if len(o.config.Ignored) > 0 {
		log.WithField("keys", strings.Join(o.config.Ignored, ", ")).Info("ConfigMap: ignoring keys of Argo's controller that argoexec-step does not use")
	}
	if ignored := podspec.IgnoredFields(o.template); len(ignored) > 0 {
		log.WithField("fields", strings.Join(ignored, ", ")).Info("template: ignoring fields that only Argo's controller acts on and that cannot change this pod run")
	}
	return o.applyParams()
}

// applyParams sets the --param values on the template's input parameters.
func (o *RenderOptions) applyParams() error {
	for name, value := range o.params {
		i := slices.IndexFunc(o.template.Inputs.Parameters, func(p workflow.Parameter) bool { return p.Name == name })
		if i < 0 {
			return usageErrorf("--param %s: the template has no input parameter %q", name, name)
		}
		o.template.Inputs.Parameters[i].Value = workflow.AnyStringPtr(value)
	}
	return nil
}

// resolveImageVolume settles emissaryImageVolume: auto before an emissary
// pod is built, to always when support says the cluster's nodes can mount
// image volumes and to never otherwise, and says which shape the pod gets
// and why. Other backends ask nothing and log nothing.
func (o *RenderOptions) resolveImageVolume(log *logrus.Entry, support func() (bool, string)) {
	if name, err := o.config.Select(o.labels, backends.All().Config()); err != nil || name != emissary.ExecutorEmissary {
		return
	}
	l := log.WithField("emissaryImageVolume", o.config.EmissaryImageVolume)
	if o.config.EmissaryImageVolume == config.ImageVolumeAuto {
		mount, why := support()
		o.config.EmissaryImageVolume = config.ImageVolumeNever
		if mount {
			o.config.EmissaryImageVolume = config.ImageVolumeAlways
		}
		l = l.WithField("why", why).WithField("chosen", o.config.EmissaryImageVolume)
	}
	if o.config.EmissaryImageVolume == config.ImageVolumeAlways {
		l.Info("emissary pod: the executor image is mounted into main and the sidecars (an image volume); no init container unless input artifacts need one")
		return
	}
	l.Info("emissary pod: init copies the wrapper to /var/run/argo, as Argo's controller does")
}

// build renders the pod named name.
func (o *RenderOptions) build(name string) (*corev1.Pod, error) {
	pod, err := podspec.Build(o.config, backends.All().Pods(), o.template, podspec.Meta{
		PodName:            name,
		Namespace:          o.Namespace,
		WorkflowName:       name,
		WorkflowLabels:     o.labels,
		ServiceAccountName: o.ServiceAccount,
	})
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	if err := checkRunnable(o.Namespace, o.template, o.config, pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// Run prints the pod as YAML; log gets what was ignored.
func (o *RenderOptions) Run(_ context.Context, out io.Writer, log *logrus.Entry) error {
	if err := o.load(log); err != nil {
		return err
	}
	name := o.Name
	if name == "" {
		name = o.template.Name
	}
	if name == "" {
		return usageErrorf("the template has no name: set --name")
	}
	o.resolveImageVolume(log, func() (bool, string) {
		return false, "render does not see the cluster's nodes; set emissaryImageVolume: always where every node can mount image volumes"
	})
	pod, err := o.build(name)
	if err != nil {
		return err
	}
	data, err := yaml.Marshal(pod)
	if err != nil {
		return fmt.Errorf("render pod: %w", err)
	}
	_, err = out.Write(data)
	return err
}

func newRenderCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *RenderOptions, IO, *logrus.Entry) error) *cobra.Command {
	o := &RenderOptions{}
	cmd := &cobra.Command{
		Use:   "render --template FILE --configmap FILE [--label k=v ...]",
		Short: "Print the pod of one workflow step as YAML",
		Args:  cobra.NoArgs,
		RunE: runSteps(g, stdio, o.Complete, o.Validate, func(log *logrus.Entry) error {
			return runF(ctx, o, stdio, log)
		}),
	}
	o.addFlags(cmd.Flags())
	return cmd
}
