package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
	"github.com/argoexec/argoexec/pkg/kubeclient"
)

// runWait is what `argoexec wait` does once its options are valid.
func runWait(ctx context.Context, o *WaitOptions) error {
	defer startCPUProfile(o.CPUProfile, o.Log)()
	usage := startStepUsage(ctx, clock.RealClock{})
	defer usage.finish(o.Log)
	flow, closeBackend, err := newFlow(ctx, &o.commonOptions, o.Log, true)
	if err != nil {
		return err
	}
	defer closeBackend()
	return flow.Wait(ctx)
}

// runInit is what `argoexec init` does once its options are valid.
func runInit(ctx context.Context, o *InitOptions) error {
	defer startCPUProfile(o.CPUProfile, o.Log)()
	usage := startStepUsage(ctx, clock.RealClock{})
	defer usage.finish(o.Log)
	flow, _, err := newFlow(ctx, &o.commonOptions, o.Log, false)
	if err != nil {
		return err
	}
	return flow.Init(ctx)
}

// flowParts is what the controller protocol decides for a flow: the
// executor's settings, where artifacts go, and how outputs are reported.
type flowParts struct {
	cfg      executor.WorkflowConfig
	store    executor.ArtifactDriver
	reporter executor.OutputReporter
}

// newFlow assembles a WorkflowExecutor from the options: the template, the
// protocol's parts, and for wait the backend, with what releases the
// backend's connections once the flow is done. This and protocolParts are
// the only places that know which controller built the pod.
func newFlow(ctx context.Context, o *commonOptions, log *logrus.Entry, forWait bool) (*executor.WorkflowExecutor, func(), error) {
	none := func() {}
	tmpl, err := o.loadTemplate()
	if err != nil {
		return nil, none, err
	}
	var restCfg *rest.Config
	if forWait {
		if restCfg, err = restConfig(o.Backend.Kubeconfig); err != nil {
			return nil, none, err
		}
	}
	parts, err := o.protocolParts(tmpl, restCfg, log)
	if err != nil {
		return nil, none, err
	}
	if !forWait {
		return executor.NewWorkflowExecutor(parts.cfg, nil, parts.store, nil, log), none, nil
	}
	runtime, err := newBackend(ctx, o, restCfg, log)
	if err != nil {
		return nil, none, err
	}
	closeBackend := none
	if c, ok := runtime.(io.Closer); ok {
		closeBackend = func() {
			if err := c.Close(); err != nil {
				log.WithError(err).Debug("close the backend's connections")
			}
		}
	}
	return executor.NewWorkflowExecutor(parts.cfg, runtime, parts.store, parts.reporter, log), closeBackend, nil
}

// protocolParts builds the parts of the protocol o speaks. restCfg is nil
// for init, which reports nothing.
func (o *commonOptions) protocolParts(tmpl *wf.Template, restCfg *rest.Config, log *logrus.Entry) (flowParts, error) {
	p := flowParts{cfg: executor.WorkflowConfig{
		Template: tmpl, PodName: o.Pod.Name, PodNamespace: o.Pod.Namespace, WorkflowName: o.WorkflowName,
		SidecarMode: o.SidecarMode, KillGrace: o.KillGrace,
	}}
	if o.Protocol != protocolArgo {
		repo, store, err := artifactRepository(o, log)
		if err != nil {
			return p, err
		}
		p.cfg.Repository, p.store = repo, store
		if restCfg != nil {
			if p.reporter, _, err = o.newReporter(restCfg, log); err != nil {
				return p, err
			}
		}
		return p, nil
	}

	include := o.Argo.IncludeScriptOutput && (tmpl.Container != nil || tmpl.Script != nil)
	p.cfg.Protocol = executor.Protocol{
		Name: protocolArgo, InputsOnVolumes: true, StageScript: true, IncludeScriptOutput: &include,
		SignalStopsMain: true, SidecarSurvivorsWarn: true, Deadline: o.Argo.Deadline,
	}
	p.cfg.ScriptPath = wf.ArgoStagingScript
	p.cfg.InputArtifacts = wf.ArgoInputArtifactsPath
	// Argo's pods give init and wait no scratch space of their own; the
	// shared emptyDir is writable by every container.
	p.cfg.TempDir = filepath.Join(wf.VarRunArgoPath, "argoexec-"+o.cmdName)
	if err := os.MkdirAll(p.cfg.TempDir, 0o700); err != nil {
		return p, fmt.Errorf("create scratch directory %s on the %s emptyDir: %w", p.cfg.TempDir, wf.VarRunArgoVolume, err)
	}
	locator, store, err := argoArtifacts(tmpl, wf.ArgoSecretsPath, log)
	if err != nil {
		return p, err
	}
	p.cfg.Protocol.Artifacts, p.store = locator, store
	if restCfg != nil {
		rep, tr, err := o.newReporter(restCfg, log)
		if err != nil {
			return p, err
		}
		p.reporter = rep
		p.cfg.Protocol.Progress = executor.ProgressSettings{File: o.Argo.ProgressFile,
			FileTick: o.Argo.ProgressFileTick, PatchTick: o.Argo.ProgressPatchTick, Reporter: tr}
	}
	return p, nil
}

// newReporter is how outputs are reported under o's protocol: the pod
// annotation under ours; under Argo's a WorkflowTaskResult (the pod
// annotation on 403), also returned as tr, which reports progress too. log
// says when a result is cut to fit the annotation and when a report call
// is retried.
func (o *commonOptions) newReporter(restCfg *rest.Config, log *logrus.Entry) (rep executor.OutputReporter, tr *executor.TaskResultReporter, err error) {
	client, err := kubeclient.New(restCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("create Kubernetes client: %w", err)
	}
	pod := &executor.PodReporter{Pods: client.Pods(o.Pod.Namespace), Namespace: o.Pod.Namespace, Name: o.Pod.Name, Log: log}
	if o.Protocol != protocolArgo {
		return pod, nil, nil
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("create Kubernetes client: %w", err)
	}
	tr = &executor.TaskResultReporter{
		Client: dyn, Namespace: o.Pod.Namespace, NodeID: o.Argo.NodeID,
		WorkflowName: o.WorkflowName, InstanceID: o.Argo.InstanceID,
		PodName: o.Pod.Name, PodUID: o.Pod.UID, Fallback: pod,
	}
	return tr, tr, nil
}

// argoArtifacts is how artifacts move under Argo's controller: inputs
// carry their own location (what they leave out is filled from the
// template's archiveLocation, which Argo's controller fills with the
// repository and this node's key prefix), outputs go to the archiveLocation
// as Argo's argoexec writes them (see executor.ArchiveLocationLocator), and
// credentials are the secret files the controller mounts under secretsDir
// for each secret an artifact names (no secrets RBAC).
func argoArtifacts(tmpl *wf.Template, secretsDir string, log *logrus.Entry) (executor.ArtifactLocator, executor.ArtifactDriver, error) {
	var def *wf.S3Artifact
	if loc := tmpl.ArchiveLocation; loc != nil && loc.S3 != nil {
		def = loc.S3
	}
	cfg := artifacts.S3Config{Credentials: artifacts.SecretFiles{Root: secretsDir}}
	if def != nil {
		cfg.Default = def.S3Bucket
	}
	s3, err := artifacts.NewS3(cfg, log)
	if err != nil {
		return nil, nil, fmt.Errorf("the template's archiveLocation: %w", err)
	}
	return executor.ArchiveLocationLocator{Location: def}, artifacts.NewStore(artifacts.StoreConfig{S3: s3}, log), nil
}

// loadTemplate decodes the template from the environment or its file.
func (o *commonOptions) loadTemplate() (*wf.Template, error) {
	if o.TemplateJSON != "" {
		t, err := wf.DecodeTemplate([]byte(o.TemplateJSON))
		if err != nil {
			return nil, fmt.Errorf("decode the template in %s: %w", wf.EnvArgoTemplate, err)
		}
		return t, nil
	}
	b, err := os.ReadFile(o.TemplatePath)
	if err != nil {
		return nil, fmt.Errorf("read the template (the pod builder projects annotation %s to %s): %w", wf.AnnotationTemplate, o.TemplatePath, err)
	}
	t, err := wf.DecodeTemplate(b)
	if err != nil {
		return nil, fmt.Errorf("decode the template in %s: %w", o.TemplatePath, err)
	}
	return t, nil
}

// artifactRepository reads the repository our pod builder passed in
// ARGO_ARTIFACT_REPOSITORY and its credentials; none is not an error until
// an artifact needs it.
func artifactRepository(o *commonOptions, log *logrus.Entry) (*wf.ArtifactRepository, executor.ArtifactDriver, error) {
	if o.ArtifactRepository == "" {
		return nil, nil, nil
	}
	repo := &wf.ArtifactRepository{}
	if err := json.Unmarshal([]byte(o.ArtifactRepository), repo); err != nil {
		return nil, nil, usageErrorf("%s is not an artifact repository: %v", wf.EnvArtifactRepository, err)
	}
	if repo.S3 == nil {
		return repo, nil, nil
	}
	s3 := repo.S3
	s3Driver, err := artifacts.NewS3(artifacts.S3Config{Default: s3.S3Bucket, Credentials: artifacts.StaticKeys{AccessKey: o.S3AccessKey, SecretKey: o.S3SecretKey}}, log)
	if err != nil {
		return nil, nil, err
	}
	return repo, artifacts.NewStore(artifacts.StoreConfig{S3: s3Driver, Allow: artifacts.RepositoryOnly(s3.S3Bucket)}, log), nil
}

// restConfig returns in-cluster credentials, or kubeconfig's when set.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("load in-cluster credentials (run in a pod with a service account, or pass --kubeconfig): %w", err)
	}
	return cfg, nil
}
