package workflow

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkflowTaskSet is Argo v3.3.8's argoproj.io/v1alpha1 WorkflowTaskSet, one
// per workflow and named after it: the controller writes the HTTP and plugin
// templates its agent pod must run into Spec.Tasks, keyed by node ID, and
// the agent (`argoexec agent main`) writes each node's result into
// Status.Nodes through the status subresource.
type WorkflowTaskSet struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is the taskset's metadata: its name is the workflow's, and
	// the controller sets LabelCompleted to "true" once the workflow is done.
	metav1.ObjectMeta `json:"metadata"`
	// Spec holds the tasks to run.
	Spec WorkflowTaskSetSpec `json:"spec"`
	// Status holds the results the agent reported.
	Status WorkflowTaskSetStatus `json:"status,omitempty"`
}

// WorkflowTaskSetSpec is what the controller asks of its agent.
type WorkflowTaskSetSpec struct {
	// Tasks are the templates to run, keyed by node ID, each kept as the
	// controller wrote it: a plugin is sent the template exactly as read.
	Tasks map[string]json.RawMessage `json:"tasks,omitempty"`
}

// WorkflowTaskSetStatus is what the agent reports.
type WorkflowTaskSetStatus struct {
	// Nodes are the results, keyed by node ID.
	Nodes map[string]NodeResult `json:"nodes,omitempty"`
}

// NodeResult is one task's result, as Argo v3.3.8's agent and executor
// plugins report it: the controller copies it onto the workflow's node.
type NodeResult struct {
	// Phase is the node's phase (NodeSucceeded, NodeFailed, NodeError, or
	// NodeRunning from a plugin that is not done).
	Phase NodePhase `json:"phase,omitempty"`
	// Message says why the node failed, or how far it got.
	Message string `json:"message,omitempty"`
	// Outputs are the node's outputs: an HTTP template's result is the
	// response body.
	Outputs *Outputs `json:"outputs,omitempty"`
	// Progress is N/M progress, from a plugin.
	Progress string `json:"progress,omitempty"`
}

// NodePhase is the phase of a workflow node, Argo's names.
type NodePhase string

// The node phases an agent reports.
const (
	// NodePending: not started.
	NodePending NodePhase = "Pending"
	// NodeRunning: started, not done.
	NodeRunning NodePhase = "Running"
	// NodeSucceeded: done, and the template's condition held.
	NodeSucceeded NodePhase = "Succeeded"
	// NodeFailed: done, and it did not succeed (a condition, a response
	// code, an unreachable server).
	NodeFailed NodePhase = "Failed"
	// NodeError: the agent could not run it or report it.
	NodeError NodePhase = "Error"
)

// Fulfilled says the phase is final: no more results will follow.
func (p NodePhase) Fulfilled() bool {
	return p == NodeSucceeded || p == NodeFailed || p == NodeError
}
