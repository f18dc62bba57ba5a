package app

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// AgentOptions are the settings of `argoexec agent init` and `argoexec
// agent main`, read from the environment Argo v3.3.8's controller gives its
// agent pod (workflow/controller/agent.go): ARGO_WORKFLOW_NAME,
// ARGO_PLUGIN_NAMES, ARGO_PLUGIN_ADDRESSES, ARGO_AGENT_PATCH_RATE and,
// when the controller has it, ARGO_AGENT_TASK_WORKERS. That pod carries
// neither the template nor the pod's name, so these commands do not go
// through the controller-protocol detection of the step commands.
type AgentOptions struct {
	// Sub is init or main.
	Sub string
	// Kubeconfig is a kubeconfig path for running outside a pod; empty
	// means in-cluster credentials (--kubeconfig).
	Kubeconfig string
	// Namespace is the workflow's: --namespace, else the service account's
	// namespace file, else the kubeconfig's namespace is not used.
	Namespace string
	// WorkflowName is ARGO_WORKFLOW_NAME: the WorkflowTaskSet to serve.
	WorkflowName string
	// PluginNames and PluginAddresses are ARGO_PLUGIN_NAMES and
	// ARGO_PLUGIN_ADDRESSES, JSON arrays in the same order.
	PluginNames, PluginAddresses []string
	// TaskWorkers is ARGO_AGENT_TASK_WORKERS; zero means the agent's default.
	TaskWorkers int
	// PatchRate is ARGO_AGENT_PATCH_RATE; zero means the agent's default.
	PatchRate time.Duration
	// TokenDir is where the plugins' tokens are (--token-dir, /var/run/argo).
	TokenDir string
	// Log is the logger, built by Complete.
	Log *logrus.Entry

	namespaceFile string
}

func (o *AgentOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig to use instead of in-cluster credentials (for running outside a pod)")
	fs.StringVar(&o.Namespace, "namespace", "", "the workflow's namespace (default: the service account's namespace file)")
	fs.StringVar(&o.TokenDir, "token-dir", wf.VarRunArgoPath, "where each plugin's token is, as DIR/PLUGIN/token")
}

// Complete fills the options from the environment and builds the logger.
func (o *AgentOptions) Complete(sub string, g *globalOptions, stdio IO) error {
	o.Sub = sub
	o.namespaceFile = stdio.NamespaceFile
	if o.Namespace == "" && stdio.NamespaceFile != "" {
		if b, err := os.ReadFile(stdio.NamespaceFile); err == nil {
			o.Namespace = strings.TrimSpace(string(b))
		}
	}
	o.WorkflowName = stdio.Getenv(wf.EnvWorkflowName)
	var err error
	if o.PluginNames, err = jsonStrings(stdio.Getenv, wf.EnvArgoPluginNames); err != nil {
		return err
	}
	if o.PluginAddresses, err = jsonStrings(stdio.Getenv, wf.EnvArgoPluginAddresses); err != nil {
		return err
	}
	if v := stdio.Getenv(wf.EnvArgoAgentTaskWorkers); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return usageErrorf("argoexec agent %s: %s=%q is not a positive whole number (how many tasks run at once)", sub, wf.EnvArgoAgentTaskWorkers, v)
		}
		o.TaskWorkers = n
	}
	if v := stdio.Getenv(wf.EnvArgoAgentPatchRate); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return usageErrorf("argoexec agent %s: %s=%q is not a positive Go duration such as 10s (how often results are patched)", sub, wf.EnvArgoAgentPatchRate, v)
		}
		o.PatchRate = d
	}
	l, err := g.logger(stdio.Err)
	if err != nil {
		return err
	}
	o.Log = l.WithFields(logrus.Fields{"cmd": "agent " + sub, "workflow": o.Namespace + "/" + o.WorkflowName})
	return nil
}

// jsonStrings reads env var name as a JSON array of strings; unset, empty
// or null (what Argo's controller writes when there are no plugins) is none.
func jsonStrings(getenv func(string) string, name string) ([]string, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" || v == "null" {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, usageErrorf("argoexec agent: %s=%q is not a JSON array of strings: %v (Argo's controller writes it on the agent pod)", name, v, err)
	}
	return out, nil
}

// Validate checks the options before any work.
func (o *AgentOptions) Validate() error {
	if len(o.PluginNames) != len(o.PluginAddresses) {
		return usageErrorf("argoexec agent %s: %s names %d plugins but %s has %d addresses: the agent pod was not built by Argo's controller",
			o.Sub, wf.EnvArgoPluginNames, len(o.PluginNames), wf.EnvArgoPluginAddresses, len(o.PluginAddresses))
	}
	if o.Sub == "init" {
		return nil
	}
	if o.WorkflowName == "" {
		return usageErrorf("argoexec agent main must run in an Argo agent pod: %s (the workflow whose WorkflowTaskSet it serves) is not set", wf.EnvWorkflowName)
	}
	if o.Namespace == "" {
		return usageErrorf("argoexec agent main: the workflow's namespace is unknown: %s is not readable (mount the service account's token, as Argo's controller does) and --namespace is not set", o.namespaceFile)
	}
	return nil
}

// newAgentCmd is `argoexec agent init|main`, Argo v3.3.8's agent pod's two
// containers.
func newAgentCmd(ctx context.Context, g *globalOptions, stdio IO, initF, mainF func(context.Context, *AgentOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Argo's agent pod: run a workflow's HTTP and executor-plugin templates (init writes the plugins' tokens, main runs the tasks)",
		Args:  cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			return usageErrorf("argoexec agent %s: unknown command: want init or main (Argo's controller runs `agent init` and `agent main`)", strings.Join(args, " "))
		},
	}
	for _, sub := range []struct {
		name, short string
		runF        func(context.Context, *AgentOptions) error
	}{
		{"init", "Write a random token per executor plugin to /var/run/argo/PLUGIN/token", initF},
		{"main", "Watch the workflow's WorkflowTaskSet, run each HTTP or plugin task once, patch the results into its status", mainF},
	} {
		o := &AgentOptions{}
		cmd.AddCommand(newStepCmd(sub.name, sub.short, cobra.NoArgs, o.addFlags,
			func([]string) error { return o.Complete(sub.name, g, stdio) }, o.Validate, func() error { return sub.runF(ctx, o) }))
	}
	return cmd
}
