//go:build argoexec_main

package app

import (
	"context"
	"crypto/rand"
	"fmt"

	"k8s.io/client-go/dynamic"

	"github.com/argoexec/argoexec/executor/agent"
	"github.com/argoexec/argoexec/pkg/version"
)

// agentRunner is, in argoexec-main, `argoexec agent init` or `main` itself.
func agentRunner(sub string) func(context.Context, *AgentOptions) error {
	if sub == "init" {
		return runAgentInit
	}
	return runAgentMain
}

// runAgentInit writes each plugin's token.
func runAgentInit(_ context.Context, o *AgentOptions) error {
	o.Log.WithFields(version.Get().Fields()).Info("argoexec agent init")
	if err := agent.WriteTokens(o.TokenDir, o.PluginNames, rand.Reader); err != nil {
		return err
	}
	o.Log.WithField("plugins", len(o.PluginNames)).Info("wrote the executor plugins' tokens")
	return nil
}

// runAgentMain serves the workflow's WorkflowTaskSet until it is deleted
// or completed.
func runAgentMain(ctx context.Context, o *AgentOptions) error {
	// The first line of the agent's log, as every step's: it says which
	// argoexec runs (Argo's says "Starting Workflow Executor").
	o.Log.WithFields(version.Get().Fields()).Info("argoexec agent main")
	restCfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("agent main: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("agent main: create Kubernetes client: %w", err)
	}
	plugins, err := agent.ReadTokens(o.TokenDir, o.PluginNames, o.PluginAddresses)
	if err != nil {
		return err
	}
	a := &agent.Agent{
		Config: agent.Config{
			Namespace: o.Namespace, WorkflowName: o.WorkflowName, Plugins: plugins,
			TaskWorkers: o.TaskWorkers, PatchRate: o.PatchRate,
		},
		Client: dyn,
		Log:    o.Log,
	}
	return a.Run(ctx)
}
