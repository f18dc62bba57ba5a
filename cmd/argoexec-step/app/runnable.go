package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

// checkRunnable refuses, before anything is created, a pod that could not
// run to the end: its namespace is not a valid name, a container has no
// image, or an artifact has no repository to come from or go to. Each
// problem names what to set.
func checkRunnable(namespace string, t *workflow.Template, cfg *config.Config, pod *corev1.Pod) error {
	var errs []error
	if namespace != "" {
		if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespace %q: not a namespace name: %s", namespace, strings.Join(msgs, "; ")))
		}
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Image == "" {
			errs = append(errs, fmt.Errorf("container %s has no image: set its image in the template", c.Name))
		}
	}
	r := cfg.ArtifactRepository
	repo := r.S3 != nil || r.GCS != nil || r.Artifactory != nil || r.OSS != nil
	for _, a := range t.Outputs.Artifacts {
		if !repo && !hasOwnS3(a) && !hasOwnKey(a) {
			errs = append(errs, fmt.Errorf("output artifact %s: no artifact repository to upload it to: set artifactRepository.s3 (or gcs, artifactory or oss) in the ConfigMap, or a location of its own on the artifact (an artifactory url, an oss endpoint, bucket and key)", a.Name))
		}
	}
	for _, a := range t.Inputs.Artifacts {
		if a.S3 != nil && r.S3 == nil && !hasOwnS3(a) {
			errs = append(errs, fmt.Errorf("input artifact %s: no artifact repository to download it from: set artifactRepository.s3 in the ConfigMap, or s3 endpoint and bucket on the artifact", a.Name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &UsageError{Err: fmt.Errorf("pod %s cannot run: %w", pod.Name, err)}
	}
	return nil
}

// hasOwnKey says whether an artifactory or oss output names all of its
// location (for oss, with endpoint and bucket), so that it needs no
// repository.
func hasOwnKey(a workflow.Artifact) bool {
	switch {
	case a.Artifactory != nil:
		return a.Artifactory.URL != ""
	case a.OSS != nil:
		return a.OSS.Endpoint != "" && a.OSS.Bucket != "" && a.OSS.Key != ""
	}
	return false
}

func hasOwnS3(a workflow.Artifact) bool {
	return a.S3 != nil && a.S3.Endpoint != "" && a.S3.Bucket != ""
}

// fromWorkflow takes the entrypoint template out of an Argo Workflow
// manifest (kind Workflow), with the workflow's labels and name; ok is false
// when data is not a Workflow. A Workflow whose entrypoint is not a single
// step (steps, dag, suspend) is an error: render and run build the pod of
// one step.
func fromWorkflow(data []byte) (tmpl []byte, labels map[string]string, name string, ok bool, err error) {
	var wf struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name         string            `json:"name"`
			GenerateName string            `json:"generateName"`
			Labels       map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Entrypoint string            `json:"entrypoint"`
			Templates  []json.RawMessage `json:"templates"`
		} `json:"spec"`
	}
	if yaml.Unmarshal(data, &wf) != nil || wf.Kind != "Workflow" {
		return nil, nil, "", false, nil
	}
	name = wf.Metadata.Name
	if name == "" {
		name = strings.TrimSuffix(wf.Metadata.GenerateName, "-")
	}
	if wf.Spec.Entrypoint == "" {
		return nil, nil, "", true, fmt.Errorf("workflow %s has no spec.entrypoint: name the template to run there, or pass that template alone", name)
	}
	var names []string
	for _, raw := range wf.Spec.Templates {
		var head struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &head) // a bad template is reported by DecodeTemplate
		names = append(names, head.Name)
		if head.Name != wf.Spec.Entrypoint {
			continue
		}
		var kinds map[string]json.RawMessage
		_ = json.Unmarshal(raw, &kinds) // as above
		for _, multi := range []string{"steps", "dag", "suspend"} {
			if _, ok := kinds[multi]; ok {
				return nil, nil, "", true, fmt.Errorf("workflow %s: entrypoint %s is a %s template; render and run build the pod of one step: pass one of its container or script templates alone (spec.templates[i])", name, head.Name, multi)
			}
		}
		return raw, maps.Clone(wf.Metadata.Labels), name, true, nil
	}
	return nil, nil, "", true, fmt.Errorf("workflow %s: no template named %q (spec.entrypoint) among %s", name, wf.Spec.Entrypoint, strings.Join(names, ", "))
}
