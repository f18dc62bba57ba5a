// Package flow runs argoexec's init and wait flows (WorkflowExecutor) over
// one executor.ContainerRuntimeExecutor: init stages inputs, wait waits for
// main, collects its outputs and reports them. What differs between the
// controllers that build pods comes in through Protocol and the small
// interfaces beside the code that uses them (ArtifactLocator,
// ArtifactDriver, OutputReporter, ProgressReporter); the flows know no
// backend and no controller by name.
package flow
