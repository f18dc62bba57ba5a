package app

import (
	"slices"
	"strconv"
	"strings"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// The controller protocols argoexec speaks, detected from its environment.
const (
	// protocolOurs is our pod builder's (pkg/podspec): the template in a
	// projected annotation file, outputs in the pod annotation.
	protocolOurs = "argoexec"
	// protocolArgo is Argo Workflows v3.3.8's controller's: the template in
	// ARGO_TEMPLATE, outputs in a WorkflowTaskResult.
	protocolArgo = "argo-v3.3"
)

// argoOnlyEnv are set by Argo's controller and never by ours; oursOnlyEnv
// the other way round. Variables both set (ARGO_POD_NAME, ARGO_WORKFLOW_NAME,
// the kubelet settings ...) say nothing about the protocol.
func argoOnlyEnv() []string {
	return []string{wf.EnvArgoTemplate, wf.EnvArgoNodeID, wf.EnvArgoIncludeScriptOutput, wf.EnvArgoDeadline}
}

func oursOnlyEnv() []string {
	return []string{wf.EnvTemplatePath, wf.EnvPodNamespace, wf.EnvArtifactRepository, wf.EnvS3AccessKey, wf.EnvS3SecretKey, wf.EnvSidecarMode}
}

// ArgoOptions are what Argo's controller passes besides the template.
type ArgoOptions struct {
	// NodeID names the WorkflowTaskResult (ARGO_NODE_ID).
	NodeID string
	// InstanceID labels it (ARGO_INSTANCE_ID).
	InstanceID string
	// IncludeScriptOutput says whether to report main's stdout (ARGO_INCLUDE_SCRIPT_OUTPUT).
	IncludeScriptOutput bool
	// Deadline is when main must have exited; zero means none (ARGO_DEADLINE).
	Deadline time.Time
	// ProgressFile is where main may write N/M lines (ARGO_PROGRESS_FILE).
	ProgressFile string
	// ProgressFileTick and ProgressPatchTick are how often wait reads it and
	// reports it; zero when the controller turned progress off.
	ProgressFileTick, ProgressPatchTick time.Duration
}

// detectProtocol names the protocol the environment speaks. A mix of both
// is an error naming the variables, never a guess.
func detectProtocol(cmdName string, getenv func(string) string) (string, error) {
	set := func(names []string) []string {
		var out []string
		for _, n := range names {
			if getenv(n) != "" {
				out = append(out, n)
			}
		}
		return out
	}
	argo, ours := set(argoOnlyEnv()), set(oursOnlyEnv())
	switch {
	case len(argo) > 0 && len(ours) > 0:
		return "", usageErrorf("argoexec %s: the environment mixes Argo Workflows' controller protocol (%s) with argoexec's own (%s): the pod was built by neither controller; rebuild it with one",
			cmdName, strings.Join(argo, ", "), strings.Join(ours, ", "))
	case len(argo) > 0 && !slices.Contains(argo, wf.EnvArgoTemplate):
		return "", usageErrorf("argoexec %s: %s set but not %s: Argo Workflows' controller sets the template on every container; the pod spec lost it",
			cmdName, strings.Join(argo, ", "), wf.EnvArgoTemplate)
	case len(argo) > 0:
		return protocolArgo, nil
	}
	return protocolOurs, nil
}

// completeArgo fills the Argo protocol's options from its environment.
func (o *commonOptions) completeArgo(cmdName string, getenv func(string) string) error {
	o.Argo.NodeID = getenv(wf.EnvArgoNodeID)
	o.Argo.InstanceID = getenv(wf.EnvArgoInstanceID)
	if v := getenv(wf.EnvArgoIncludeScriptOutput); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return usageErrorf("argoexec %s: %s=%q is not a boolean (want true or false)", cmdName, wf.EnvArgoIncludeScriptOutput, v)
		}
		o.Argo.IncludeScriptOutput = b
	}
	if v := getenv(wf.EnvArgoDeadline); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return usageErrorf("argoexec %s: %s=%q is not an RFC 3339 time (Argo's controller writes e.g. 2026-01-02T15:04:05Z; 0001-01-01T00:00:00Z means none): %v", cmdName, wf.EnvArgoDeadline, v, err)
		}
		if !t.IsZero() {
			o.Argo.Deadline = t
		}
	}
	o.Argo.ProgressFile = getenv(wf.EnvArgoProgressFile)
	for _, d := range []struct {
		name string
		into *time.Duration
	}{{wf.EnvArgoProgressFileTick, &o.Argo.ProgressFileTick}, {wf.EnvArgoProgressPatchTick, &o.Argo.ProgressPatchTick}} {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		t, err := time.ParseDuration(v)
		if err != nil || t < 0 {
			return usageErrorf("argoexec %s: %s=%q is not a duration (Argo's controller writes e.g. 3s or 1m0s)", cmdName, d.name, v)
		}
		*d.into = t
	}
	// Argo's controller injects user sidecars as plain containers: wait stops them.
	o.SidecarMode = wf.SidecarModeLegacy
	return nil
}

// validateArgo checks what wait needs of Argo's protocol.
func (o *commonOptions) validateArgo(cmdName string) error {
	if o.Protocol == protocolArgo && cmdName == "wait" && o.Argo.NodeID == "" {
		return usageErrorf("argoexec wait: %s is not set: Argo Workflows' controller names the WorkflowTaskResult with it", wf.EnvArgoNodeID)
	}
	return nil
}
