// Package argo is Argo Workflows v3.3.8's controller's side of the pod
// (../shared/argo-v3.3-protocol.md): the template in ARGO_TEMPLATE, the
// script staged at /argo/staging/script, inputs under /argo/inputs/artifacts
// or on main's volumes, credentials as the secret files the controller
// mounts under /argo/secret, outputs at the template's archiveLocation and
// in a WorkflowTaskResult (the pod annotation on 403), and SIGTERM to wait
// as the stop command (`kill -15 $(pidof argoexec)`).
package argo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"

	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/protocol"
	"github.com/argoexec/argoexec/executor/report"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// Name names this protocol in logs.
const Name = "argo-v3.3"

// Protocol is Argo Workflows v3.3.8's controller's side of the pod; the
// zero value is ready for Complete.
type Protocol struct {
	// TemplateJSON is the template itself (ARGO_TEMPLATE).
	TemplateJSON string
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
	// SecretsDir is where the controller mounts the secrets artifacts name;
	// empty means workflow.ArgoSecretsPath.
	SecretsDir string
	// GCS is where gcs artifacts go when not to Google's servers
	// (STORAGE_EMULATOR_HOST, GCE_METADATA_HOST).
	GCS artifacts.GCSEndpoints
	// ScratchRoot is where init and wait keep artifacts on their way (the
	// shared emptyDir); empty means workflow.VarRunArgoPath.
	ScratchRoot string
}

// Name implements protocol.Protocol.
func (*Protocol) Name() string { return Name }

// OwnEnv implements protocol.Protocol: variables Argo's controller sets and
// argoexec's never does.
func (*Protocol) OwnEnv() []string {
	return []string{wf.EnvArgoTemplate, wf.EnvArgoNodeID, wf.EnvArgoIncludeScriptOutput, wf.EnvArgoDeadline}
}

// Complete implements protocol.Protocol.
func (p *Protocol) Complete(cmd string, getenv func(string) string) error {
	p.TemplateJSON = getenv(wf.EnvArgoTemplate)
	if p.TemplateJSON == "" {
		var set []string
		for _, n := range p.OwnEnv() {
			if getenv(n) != "" {
				set = append(set, n)
			}
		}
		return fmt.Errorf("argoexec %s: %s set but not %s: Argo Workflows' controller sets the template on every container; the pod spec lost it",
			cmd, strings.Join(set, ", "), wf.EnvArgoTemplate)
	}
	p.NodeID = getenv(wf.EnvArgoNodeID)
	p.InstanceID = getenv(wf.EnvArgoInstanceID)
	if v := getenv(wf.EnvArgoIncludeScriptOutput); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("argoexec %s: %s=%q is not a boolean (want true or false)", cmd, wf.EnvArgoIncludeScriptOutput, v)
		}
		p.IncludeScriptOutput = b
	}
	if v := getenv(wf.EnvArgoDeadline); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fmt.Errorf("argoexec %s: %s=%q is not an RFC 3339 time (Argo's controller writes e.g. 2026-01-02T15:04:05Z; 0001-01-01T00:00:00Z means none): %v", cmd, wf.EnvArgoDeadline, v, err)
		}
		if !t.IsZero() {
			p.Deadline = t
		}
	}
	p.ProgressFile = getenv(wf.EnvArgoProgressFile)
	p.GCS = artifacts.GCSEndpoints{EmulatorHost: getenv(wf.EnvStorageEmulatorHost), MetadataHost: getenv(wf.EnvGCEMetadataHost)}
	for _, d := range []struct {
		name string
		into *time.Duration
	}{{wf.EnvArgoProgressFileTick, &p.ProgressFileTick}, {wf.EnvArgoProgressPatchTick, &p.ProgressPatchTick}} {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		t, err := time.ParseDuration(v)
		if err != nil || t < 0 {
			return fmt.Errorf("argoexec %s: %s=%q is not a duration (Argo's controller writes e.g. 3s or 1m0s)", cmd, d.name, v)
		}
		*d.into = t
	}
	return nil
}

// Validate implements protocol.Protocol: every command but init reports,
// and the report is named after the node.
func (p *Protocol) Validate(cmd string) error {
	if cmd != "init" && p.NodeID == "" {
		return fmt.Errorf("argoexec %s: %s is not set: Argo Workflows' controller names the WorkflowTaskResult with it", cmd, wf.EnvArgoNodeID)
	}
	return nil
}

// Template implements protocol.Protocol: the template in ARGO_TEMPLATE,
// unless path names a file.
func (p *Protocol) Template(path string) (*wf.Template, error) {
	if path != "" {
		return protocol.ReadTemplate(path, "--template")
	}
	t, err := wf.DecodeTemplate([]byte(p.TemplateJSON))
	if err != nil {
		return nil, fmt.Errorf("decode the template in %s: %w", wf.EnvArgoTemplate, err)
	}
	return t, nil
}

// Flow implements protocol.Protocol.
func (p *Protocol) Flow(req protocol.Request) (protocol.FlowParts, error) {
	tmpl := req.Template
	// As Argo's Template.HasOutput: a containerSet has a result when one of
	// its containers is main.
	include := p.IncludeScriptOutput && (tmpl.Container != nil || tmpl.Script != nil ||
		tmpl.ContainerSet != nil && slices.Contains(tmpl.MainContainerNames(), wf.MainContainerName))
	parts := protocol.FlowParts{Config: flow.WorkflowConfig{
		Protocol: flow.Protocol{
			InputsOnVolumes: true, StageScript: true, IncludeScriptOutput: &include,
			SignalStopsMain: true, SidecarSurvivorsWarn: true, Deadline: p.Deadline,
			ArchiveLogs: tmpl.SaveLogsAsArtifact(),
		},
		Template: tmpl,
		Step:     flow.StepRef{Pod: req.Pod.Name, Namespace: req.Pod.Namespace, Workflow: req.WorkflowName},
		// Argo's controller injects user sidecars as plain containers: wait stops them.
		SidecarMode: wf.SidecarModeLegacy,
		Timing:      flow.Timing{KillGrace: req.KillGrace},
		Paths:       flow.Paths{ScriptPath: wf.ArgoStagingScript, InputArtifacts: wf.ArgoInputArtifactsPath},
	}}
	// Argo's pods give init and wait no scratch space of their own; the
	// shared emptyDir is writable by every container.
	root := p.ScratchRoot
	if root == "" {
		root = wf.VarRunArgoPath
	}
	parts.Config.Paths.TempDir = filepath.Join(root, "argoexec-"+req.Command)
	if err := os.MkdirAll(parts.Config.Paths.TempDir, 0o700); err != nil {
		return parts, fmt.Errorf("create scratch directory %s on the %s emptyDir: %w", parts.Config.Paths.TempDir, wf.VarRunArgoVolume, err)
	}
	locator, store, err := p.artifacts(tmpl, req.Log)
	if err != nil {
		return parts, err
	}
	parts.Config.Protocol.Artifacts, parts.Store = locator, store
	if req.RESTConfig == nil {
		return parts, nil
	}
	tr, err := p.reporter(req)
	if err != nil {
		return parts, err
	}
	parts.Reporter = tr
	parts.Config.Protocol.Progress = flow.ProgressSettings{File: p.ProgressFile,
		FileTick: p.ProgressFileTick, PatchTick: p.ProgressPatchTick, Reporter: tr}
	return parts, nil
}

// Main implements protocol.Protocol: the report as wait's, the deadline
// from ARGO_DEADLINE, and for data templates the archiveLocation's bucket
// with the secret files the controller mounts in main.
func (p *Protocol) Main(req protocol.Request) (protocol.MainParts, error) {
	tr, err := p.reporter(req)
	if err != nil {
		return protocol.MainParts{}, err
	}
	env := p.artifactEnv(req.Template, req.Log)
	parts := protocol.MainParts{Reporter: tr, Deadline: p.Deadline, DataRepository: req.Template.ArchiveLocation,
		DataEnv: func(string) artifacts.Env { return env }}
	return parts, nil
}

func (p *Protocol) secretsDir() string {
	if p.SecretsDir != "" {
		return p.SecretsDir
	}
	return wf.ArgoSecretsPath
}

// reporter is a WorkflowTaskResult named after the node, with the pod's
// outputs annotation as its fallback on 403.
func (p *Protocol) reporter(req protocol.Request) (*TaskResultReporter, error) {
	pod, err := report.NewPodReporter(req.RESTConfig, req.Pod.Namespace, req.Pod.Name, req.Log)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(req.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("create Kubernetes client: %w", err)
	}
	return &TaskResultReporter{
		Client: dyn, Namespace: req.Pod.Namespace, NodeID: p.NodeID,
		WorkflowName: req.WorkflowName, InstanceID: p.InstanceID,
		PodName: req.Pod.Name, PodUID: req.Pod.UID, Fallback: pod,
	}, nil
}

// artifacts is how artifacts move under Argo's controller: inputs carry
// their own location (what they leave out is filled from the template's
// archiveLocation, which Argo's controller fills with the repository and
// this node's key prefix), outputs go to the archiveLocation as Argo's
// argoexec writes them (ArchiveLocationLocator), and credentials are the
// secret files the controller mounts for each secret an artifact names (no
// secrets RBAC).
func (p *Protocol) artifacts(tmpl *wf.Template, log *logrus.Entry) (flow.ArtifactLocator, flow.ArtifactDriver, error) {
	store, err := artifacts.NewStoreFor(p.artifactEnv(tmpl, log))
	if err != nil {
		return nil, nil, fmt.Errorf("the template's archiveLocation: %w", err)
	}
	return ArchiveLocationLocator{Location: tmpl.ArchiveLocation}, store, nil
}

// artifactEnv is what every store is built from under Argo's controller:
// the template's archiveLocation as the default, and the secret files the
// controller mounts.
func (p *Protocol) artifactEnv(tmpl *wf.Template, log *logrus.Entry) artifacts.Env {
	var def wf.ArtifactLocation
	if tmpl.ArchiveLocation != nil {
		def = *tmpl.ArchiveLocation
	}
	return artifacts.Env{Default: def, Credentials: artifacts.SecretFiles{Root: p.secretsDir()}, Log: log,
		Git: artifacts.GitCommand{SecretsDir: p.secretsDir()}, GCS: p.GCS}
}
