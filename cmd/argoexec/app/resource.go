package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// resourceActions are the ACTIONs of `argoexec resource` (executor/resource's
// Actions; not imported, to keep its libraries out of argoexec).
var resourceActions = []string{"get", "create", "apply", "delete", "replace", "patch"}

// resourceArgs wants exactly one ACTION and names them when it is missing.
func resourceArgs(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("argoexec resource takes one ACTION, got %d arguments: want one of %s (Argo's controller passes the template's resource.action)", len(args), strings.Join(resourceActions, ", "))
	}
	return nil
}

// EnvResourceStateCheckInterval is Argo's tunable for how often a resource
// template's object is read when it cannot be watched (default 5s).
const EnvResourceStateCheckInterval = "RESOURCE_STATE_CHECK_INTERVAL"

// mainOptions are what the commands that run as a pod's main container
// (resource, data) share: the pod, the template, the controller protocol
// and the logger. They use no container runtime executor.
type mainOptions struct {
	commonOptions
	// Log is the logger, with command and pod fields, built by complete.
	Log *logrus.Entry
}

func (o *mainOptions) complete(cmdName string, g *globalOptions, stdio IO) error {
	if err := o.commonOptions.complete(cmdName, stdio.Getenv, stdio.NamespaceFile); err != nil {
		return err
	}
	l, err := g.logger(stdio.Err)
	if err != nil {
		return err
	}
	o.Log = l.WithFields(logrus.Fields{"cmd": cmdName, "pod": o.Pod.Namespace + "/" + o.Pod.Name, "protocol": o.Protocol.Name()})
	return nil
}

// validate checks what a main-container command needs: the pod, and under
// Argo's protocol the node that names the task result. The executor setting
// is not checked: these commands use none (Argo sets it to emissary, say).
func (o *mainOptions) validate(cmdName string) error {
	if o.Pod.Name == "" {
		return usageErrorf("argoexec %s must run inside a workflow pod: %s is not set", cmdName, wf.EnvPodName)
	}
	if o.Pod.Namespace == "" {
		return usageErrorf("argoexec %s must run inside a workflow pod: %s is not set and %s is not readable", cmdName, wf.EnvPodNamespace, o.namespaceFile)
	}
	return o.validateProtocol(cmdName)
}

// ResourceOptions are the settings of `argoexec resource ACTION`.
type ResourceOptions struct {
	mainOptions
	// Action is the command's argument: get, create, apply, delete, replace or patch.
	Action string
	// PollInterval is RESOURCE_STATE_CHECK_INTERVAL: how often the object is
	// read when the API server refuses to watch it; zero means
	// resource.DefaultPollInterval.
	PollInterval time.Duration
}

// Complete fills the options from the argument and the environment.
func (o *ResourceOptions) Complete(g *globalOptions, stdio IO, args []string) error {
	if err := o.complete("resource", g, stdio); err != nil {
		return err
	}
	o.Action = args[0]
	if v := stdio.Getenv(EnvResourceStateCheckInterval); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return usageErrorf("argoexec resource: %s=%q is not a positive duration (e.g. 5s)", EnvResourceStateCheckInterval, v)
		}
		o.PollInterval = d
	}
	return nil
}

// Validate checks the options before any work.
func (o *ResourceOptions) Validate() error { return o.validate("resource") }

func newResourceCmd(ctx context.Context, g *globalOptions, stdio IO, runF func(context.Context, *ResourceOptions) error) *cobra.Command {
	o := &ResourceOptions{}
	return newStepCmd("resource ACTION", "Run a resource template: get, create, apply, delete, replace or patch its manifest, wait on its conditions, report its outputs", resourceArgs, o.addFlags,
		func(args []string) error { return o.Complete(g, stdio, args) }, o.Validate, func() error { return runF(ctx, o) })
}
