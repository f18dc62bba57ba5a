package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/argoexec/argoexec/executor"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// runWait is what `argoexec wait` does once its options are valid.
func runWait(ctx context.Context, o *WaitOptions) error {
	flow, err := newFlow(ctx, &o.commonOptions, o.Log, true)
	if err != nil {
		return err
	}
	defer logPeakRSS(o.Log)
	return flow.Wait(ctx)
}

// runInit is what `argoexec init` does once its options are valid.
func runInit(ctx context.Context, o *InitOptions) error {
	flow, err := newFlow(ctx, &o.commonOptions, o.Log, false)
	if err != nil {
		return err
	}
	defer logPeakRSS(o.Log)
	return flow.Init(ctx)
}

// newFlow assembles a WorkflowExecutor from the options: the template, the
// artifact repository, and for wait the backend and the outputs reporter.
func newFlow(ctx context.Context, o *commonOptions, log *logrus.Entry, forWait bool) (*executor.WorkflowExecutor, error) {
	tmpl, err := loadTemplate(o.TemplatePath)
	if err != nil {
		return nil, err
	}
	repo, store, err := artifactRepository(o, log)
	if err != nil {
		return nil, err
	}
	cfg := executor.WorkflowConfig{
		Template: tmpl, PodName: o.Pod.Name, PodNamespace: o.Pod.Namespace, WorkflowName: o.WorkflowName,
		SidecarMode: o.SidecarMode, Repository: repo,
	}
	if !forWait {
		return executor.NewWorkflowExecutor(cfg, nil, store, nil, log), nil
	}
	restCfg, err := restConfig(o.Backend.Kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("create Kubernetes client: %w", err)
	}
	runtime, err := newBackend(ctx, o, log)
	if err != nil {
		return nil, err
	}
	reporter := &executor.PodReporter{Client: client, Namespace: o.Pod.Namespace, Name: o.Pod.Name}
	return executor.NewWorkflowExecutor(cfg, runtime, store, reporter, log), nil
}

func loadTemplate(p string) (*wf.Template, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read the template (the pod builder projects annotation %s to %s): %w", wf.AnnotationTemplate, p, err)
	}
	t, err := wf.DecodeTemplate(b)
	if err != nil {
		return nil, fmt.Errorf("decode the template in %s: %w", p, err)
	}
	return t, nil
}

// artifactRepository reads the repository the pod builder passed in
// ARGO_ARTIFACT_REPOSITORY and its credentials; none is not an error until
// an artifact needs it.
func artifactRepository(o *commonOptions, log *logrus.Entry) (*wf.ArtifactRepository, executor.ArtifactStore, error) {
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
	store, err := artifacts.NewS3(artifacts.S3Config{
		Endpoint: s3.Endpoint, Bucket: s3.Bucket, Region: s3.Region, Insecure: s3.Insecure != nil && *s3.Insecure,
		AccessKey: o.S3AccessKey, SecretKey: o.S3SecretKey,
	}, log)
	if err != nil {
		return nil, nil, err
	}
	return repo, store, nil
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
