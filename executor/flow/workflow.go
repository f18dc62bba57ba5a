package flow

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// OutputReporter publishes what wait collected (report.PodReporter writes it to the
// pod's outputs annotation).
type OutputReporter interface {
	Report(ctx context.Context, outputs *wf.NodeOutputs) error
}

// Protocol is what the flows need to know of the controller that built the
// pod: its policies here, its behaviours as the interfaces beside them
// (ArtifactLocator, OutputReporter, ProgressReporter). Each controller's
// protocol package (executor/protocol/native, executor/protocol/argo) fills
// it; the flows read it and never ask which controller they serve. Where
// things are (the script, the input artifacts) is in WorkflowConfig's
// paths, which the protocol package also sets.
type Protocol struct {
	// InputsOnVolumes says that an input artifact whose path is on one of
	// main's volume mounts is written through wait's and init's mirror of
	// that volume (MainCtrFS+path) instead of InputArtifactsDir: Argo's
	// controller mounts no input-artifacts subPath over a user volume.
	InputsOnVolumes bool
	// StageScript says that init writes a script template's source to
	// WorkflowConfig.Paths.ScriptPath for main (Argo's controller runs main on
	// /argo/staging/script); our pod builder projects the source into main
	// from a pod annotation instead, and gives a script without input
	// artifacts no init container.
	StageScript bool
	// IncludeScriptOutput says whether wait reports main's stdout as the
	// result; nil means for script templates only.
	IncludeScriptOutput *bool
	// SignalStopsMain says that SIGTERM to wait is the controller's stop
	// request (Argo's `kill -15 $(pidof argoexec)`), so wait stops main
	// before saving; without it SIGTERM comes from the kubelet, which is
	// already stopping every container.
	SignalStopsMain bool
	// SidecarSurvivorsWarn says that a legacy sidecar still running after
	// wait's stop (executor.ErrPID1Survived) is a warning naming it, not a
	// failure of the step: Argo's controller runs the pod's
	// workflows.argoproj.io/kill-cmd-<container> command afterwards, and
	// Argo's argoexec exits 0 for it.
	SidecarSurvivorsWarn bool
	// Artifacts says where output artifacts go and how the report names
	// them; nil means no output artifact can be saved.
	Artifacts ArtifactLocator
	// ArchiveLogs says that wait uploads main's combined log (stdout and
	// stderr, as the backend reads it) to where Artifacts puts an artifact
	// named workflow.MainLogsArtifactName stored as the file
	// workflow.MainLogFileName, and reports it after the template's output
	// artifacts by its location alone: Argo's archiveLogs.
	ArchiveLogs bool
	// Progress is the self-reported progress monitor; zero means none.
	Progress ProgressSettings
	// Deadline is when main must have exited (Argo's ARGO_DEADLINE); zero
	// means only the template's activeDeadlineSeconds bounds it.
	Deadline time.Time
}

// WorkflowConfig is what the init and wait flows need besides a backend:
// the controller's decisions, the step, and three groups the flows read
// apart (names for artifact keys, paths in the pod, time budgets).
type WorkflowConfig struct {
	// Protocol is what the controller that built the pod decides.
	Protocol Protocol
	// Template is the step being run, as the pod builder passed it.
	Template *wf.Template
	// Step names the pod and workflow; they fill artifact keys.
	Step StepRef
	// SidecarMode is native or legacy: in legacy mode wait stops sidecars.
	SidecarMode string
	// Paths are where the flows find and put things in the pod.
	Paths Paths
	// Timing holds the flows' time budgets.
	Timing Timing
	// MaxResultBytes caps a script's result (its tail is kept); zero means
	// workflow.MaxFileBytes.
	MaxResultBytes int
	// Clock tells the time the save window and the deadline are measured
	// from; nil means the real clock. (Context deadlines still expire on
	// the real one.)
	Clock clock.WithTicker
}

// StepRef names the step's pod and workflow, for artifact keys.
type StepRef struct {
	// Pod and Namespace are the pod's name and namespace.
	Pod, Namespace string
	// Workflow is the workflow's name.
	Workflow string
}

// Paths are where the init and wait flows find and put things; each has a
// default, so tests set only what they point at a temporary directory.
type Paths struct {
	// MainCtrFS is where main's volume mounts are mirrored in wait
	// (workflow.MainCtrFSPath).
	MainCtrFS string
	// VarRunArgo is the shared emptyDir (workflow.VarRunArgoPath).
	VarRunArgo string
	// ScriptPath is where init stages a script template's source for main
	// to run; empty means staging/script under VarRunArgo.
	ScriptPath string
	// InputArtifacts is where init puts input artifacts
	// (workflow.InputArtifactsPath).
	InputArtifacts string
	// TempDir holds artifacts on their way to the repository; empty means
	// os.TempDir().
	TempDir string
}

// withDefaults fills the paths left empty.
func (p Paths) withDefaults() Paths {
	if p.MainCtrFS == "" {
		p.MainCtrFS = wf.MainCtrFSPath
	}
	if p.VarRunArgo == "" {
		p.VarRunArgo = wf.VarRunArgoPath
	}
	if p.ScriptPath == "" {
		p.ScriptPath = filepath.Join(p.VarRunArgo, "staging", "script")
	}
	if p.InputArtifacts == "" {
		p.InputArtifacts = wf.InputArtifactsPath
	}
	return p
}

// Timing holds how long wait gives each part of stopping and saving; zero
// fields take the defaults below, sized for the pod's default 30 s
// termination grace.
type Timing struct {
	// KillGrace is how long stopped containers get between SIGTERM and
	// SIGKILL; zero means 10 s.
	KillGrace time.Duration
	// StopTimeout bounds stopping main after the template's deadline (Kill
	// with half of KillGrace, and the status reads around it), within
	// SaveTimeout; zero means KillGrace.
	StopTimeout time.Duration
	// SaveTimeout bounds stopping main, collecting and reporting outputs
	// after wait was interrupted (SIGTERM, deadline), and the report alone
	// otherwise; zero means 20 s, inside the pod's default 30 s termination
	// grace.
	SaveTimeout time.Duration
	// ReportReserve is the end of SaveTimeout kept for the report: collecting
	// stops when only this much is left. Zero means 5 s (a quarter of a
	// shorter SaveTimeout).
	ReportReserve time.Duration
	// ProgressEvery is how often a long output archive logs its size and
	// rate; zero means artifacts.DefaultProgressEvery.
	ProgressEvery time.Duration
}

// withDefaults fills the budgets left zero.
func (t Timing) withDefaults() Timing {
	if t.KillGrace == 0 {
		t.KillGrace = 10 * time.Second
	}
	if t.SaveTimeout == 0 {
		t.SaveTimeout = 20 * time.Second
	}
	if t.ReportReserve == 0 {
		t.ReportReserve = min(5*time.Second, t.SaveTimeout/4)
	}
	if t.StopTimeout == 0 {
		t.StopTimeout = t.KillGrace
	}
	return t
}

// WorkflowExecutor runs the init and wait flows over a ContainerRuntimeExecutor.
// It knows no backend by name.
type WorkflowExecutor struct {
	cfg      WorkflowConfig
	runtime  executor.ContainerRuntimeExecutor
	store    ArtifactDriver
	reporter OutputReporter
	log      *logrus.Entry
}

// NewWorkflowExecutor returns a WorkflowExecutor. runtime may be nil for init,
// store may be nil when no artifacts are used, reporter may be nil for init.
func NewWorkflowExecutor(cfg WorkflowConfig, runtime executor.ContainerRuntimeExecutor, store ArtifactDriver, reporter OutputReporter, log *logrus.Entry) *WorkflowExecutor {
	if cfg.MaxResultBytes == 0 {
		cfg.MaxResultBytes = wf.MaxFileBytes
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	cfg.Paths = cfg.Paths.withDefaults()
	cfg.Timing = cfg.Timing.withDefaults()
	return &WorkflowExecutor{cfg: cfg, runtime: runtime, store: store, reporter: reporter, log: log}
}

// mainVolumeMountPaths lists the mount paths of main's volume mounts (a
// containerSet's: those every container of the set shares).
func (we *WorkflowExecutor) mainVolumeMountPaths() []string {
	t := we.cfg.Template
	var paths []string
	switch {
	case t.Container != nil:
		for _, m := range t.Container.VolumeMounts {
			paths = append(paths, m.MountPath)
		}
	case t.Script != nil:
		for _, m := range t.Script.VolumeMounts {
			paths = append(paths, m.MountPath)
		}
	case t.ContainerSet != nil:
		// the set's shared mounts, which Argo's controller mirrors into wait
		// (Template.GetVolumeMounts)
		for _, m := range t.ContainerSet.VolumeMounts {
			paths = append(paths, m.MountPath)
		}
	}
	return paths
}

// onVolume reports whether p (a path in main) is on one of main's volume
// mounts, and if so where wait sees it under MainCtrFS: the mount's mirror
// root and p relative to it.
func (we *WorkflowExecutor) onVolume(p string) (root, rel string, ok bool) {
	p = path.Clean(p)
	best := ""
	for _, m := range we.mainVolumeMountPaths() {
		m = path.Clean(m)
		if (p == m || strings.HasPrefix(p, strings.TrimSuffix(m, "/")+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return "", "", false
	}
	// The mirror of mount m is MainCtrFS+m; the archive root must be the
	// mount itself so links cannot leave the volume.
	mirror := path.Join(we.cfg.Paths.MainCtrFS, best)
	rel = strings.TrimPrefix(strings.TrimPrefix(p, best), "/")
	if rel == "" {
		// The output is the mount itself (say, a subPath file mount).
		return path.Dir(mirror), path.Base(mirror), true
	}
	return mirror, rel, true
}

// stepErrors collects the failures of steps that do not stop the flow.
type stepErrors []error

func (s *stepErrors) add(step string, err error) {
	if err != nil {
		*s = append(*s, fmt.Errorf("%s: %w", step, err))
	}
}

func (s stepErrors) err() error { return errors.Join(s...) }
