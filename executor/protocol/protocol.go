// Package protocol is the seam between argoexec and the controller that
// built its pod. Each controller's side is one implementation of Protocol in
// its own package (native: argoexec's pod builder, pkg/podspec; argo: Argo
// Workflows v3.3.8's controller), chosen once in cmd/ from the environment;
// after that choice nothing compares a protocol's name. A new protocol is
// one package and one line in cmd/argoexec/app.
package protocol

import (
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"

	"github.com/argoexec/argoexec/executor/flow"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// Protocol is one controller's side of the pods it builds: where the
// template, the script and the inputs come from, where credentials come
// from, how outputs are reported and what a stop signal means.
type Protocol interface {
	// Name names the protocol in logs and messages.
	Name() string
	// OwnEnv lists the environment variables only this controller sets:
	// cmd/ speaks the protocol whose variables are set and refuses a mix.
	OwnEnv() []string
	// Complete reads the protocol's settings for command cmd (init, wait,
	// data, resource) from the environment. It only parses.
	Complete(cmd string, getenv func(string) string) error
	// Validate says, for the first thing wrong for cmd, what is wrong and
	// what to do.
	Validate(cmd string) error
	// Template loads the step's template; path is the --template flag's
	// file, which wins when set.
	Template(path string) (*wf.Template, error)
	// Flow assembles what the init and wait flows take from the controller.
	Flow(req Request) (FlowParts, error)
	// Main assembles what the main-container commands (data, resource)
	// take from it.
	Main(req Request) (MainParts, error)
}

// Pod identifies the pod argoexec runs in.
type Pod struct {
	Name, Namespace, UID string
}

// Request is what cmd/ knows when it asks a protocol for a flow's parts.
type Request struct {
	// Command is init, wait, data or resource: it names scratch paths and
	// messages.
	Command string
	// Pod is the pod argoexec runs in.
	Pod Pod
	// WorkflowName fills artifact keys and labels the report.
	WorkflowName string
	// Template is the step, as Protocol.Template loaded it.
	Template *wf.Template
	// RESTConfig reaches the API server for the report; nil for init,
	// which reports nothing.
	RESTConfig *rest.Config
	// KillGrace is the pod's termination grace, zero for the flow's default.
	KillGrace time.Duration
	// Log is the command's logger.
	Log *logrus.Entry
}

// FlowParts are what a protocol decides for the init and wait flows.
type FlowParts struct {
	// Config is the flows' configuration, Protocol and paths filled in.
	Config flow.WorkflowConfig
	// Store loads and saves artifacts; nil when no store is configured.
	Store flow.ArtifactDriver
	// Reporter publishes the outputs; nil for init.
	Reporter flow.OutputReporter
}

// MainParts are what a protocol decides for the commands that run as a
// pod's main container.
type MainParts struct {
	// Reporter publishes the outputs.
	Reporter flow.OutputReporter
	// Deadline is when the step must be done; zero means none.
	Deadline time.Time
	// DataRepository is where an artifactPaths location of a data
	// template that names no more than a key is relocated; nil when there
	// is none.
	DataRepository *wf.ArtifactLocation
	// DataEnv is what `argoexec data` builds the driver of a source's
	// store kind from (artifacts.Kind.New), as the flows' stores are built.
	DataEnv func(kind string) artifacts.Env
	// DataAllow checks an s3 source before it is listed; nil allows any.
	DataAllow artifacts.BucketPolicy
}

// ReadTemplate decodes the template in file; from names where the path
// came from, for the message.
func ReadTemplate(file, from string) (*wf.Template, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read the template %s (%s): %w", file, from, err)
	}
	t, err := wf.DecodeTemplate(b)
	if err != nil {
		return nil, fmt.Errorf("decode the template in %s: %w", file, err)
	}
	return t, nil
}
