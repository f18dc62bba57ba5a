package config

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// Select picks the backend for a workflow with these labels: the label
// workflows.argoproj.io/container-runtime-executor first (an unknown value
// is an error), then the containerRuntimeExecutors selectors in order, then
// containerRuntimeExecutor. The label must name one of backends; a
// selector that picks one of Argo's executors argoexec does not implement
// (pns) is an error saying so.
func (c *Config) Select(workflowLabels map[string]string, backends []Backend) (string, error) {
	if name, ok := workflowLabels[workflow.LabelContainerRuntimeExecutor]; ok {
		if err := checkExecutorName("label "+workflow.LabelContainerRuntimeExecutor, name, backends); err != nil {
			return "", fmt.Errorf("select executor: %w", err)
		}
		return name, nil
	}
	for i, s := range c.ContainerRuntimeExecutors {
		sel, err := metav1.LabelSelectorAsSelector(&s.Selector)
		if err != nil {
			return "", fmt.Errorf("select executor: containerRuntimeExecutors[%d].selector: %w", i, err)
		}
		if !sel.Empty() && sel.Matches(labels.Set(workflowLabels)) {
			if err := checkExecutorName(fmt.Sprintf("containerRuntimeExecutors[%d] (its selector matches the workflow's labels)", i), s.Name, backends); err != nil {
				return "", fmt.Errorf("select executor: %w", err)
			}
			return s.Name, nil
		}
	}
	return c.ContainerRuntimeExecutor, nil
}
