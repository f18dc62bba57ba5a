package flow

import (
	"errors"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// ArtifactLocator says where an output artifact is uploaded and how the
// report names it: the controller that built the pod decides both (each
// protocol package has its own).
type ArtifactLocator interface {
	// Locate returns a with the location to upload to, and a as the outputs
	// report must show it once uploaded. An artifact with no location of
	// its own and no repository to put it in is an error wrapping
	// ErrNoRepository.
	Locate(a wf.Artifact, vars KeyVars) (upload, reported wf.Artifact, err error)
	// NoRepositoryHint says where the user configures the repository that
	// was missing, for the error that names the artifacts which needed it.
	NoRepositoryHint() string
}

// KeyVars are what an artifact key may be made of.
type KeyVars struct {
	WorkflowName, PodName, PodNamespace, TemplateName string
}

// ErrNoRepository is wrapped by Locate errors for an artifact with no
// location of its own and no repository to put it in.
var ErrNoRepository = errors.New("no artifact repository")
