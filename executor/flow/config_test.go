package flow

import (
	"testing"
	"time"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func TestTimingDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Timing
		want Timing
	}{
		{"zero", Timing{}, Timing{KillGrace: 10 * time.Second, StopTimeout: 10 * time.Second, SaveTimeout: 20 * time.Second, ReportReserve: 5 * time.Second}},
		{"short save keeps a quarter for the report", Timing{SaveTimeout: 8 * time.Second}, Timing{KillGrace: 10 * time.Second, StopTimeout: 10 * time.Second, SaveTimeout: 8 * time.Second, ReportReserve: 2 * time.Second}},
		{"stop follows the pod's grace", Timing{KillGrace: 3 * time.Second}, Timing{KillGrace: 3 * time.Second, StopTimeout: 3 * time.Second, SaveTimeout: 20 * time.Second, ReportReserve: 5 * time.Second}},
		{"set fields kept", Timing{KillGrace: 1, StopTimeout: 2, SaveTimeout: 3, ReportReserve: 4, ProgressEvery: 5}, Timing{KillGrace: 1, StopTimeout: 2, SaveTimeout: 3, ReportReserve: 4, ProgressEvery: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(); got != tt.want {
				t.Errorf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPathsDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Paths
		want Paths
	}{
		{"zero", Paths{}, Paths{MainCtrFS: wf.MainCtrFSPath, VarRunArgo: wf.VarRunArgoPath, ScriptPath: wf.VarRunArgoPath + "/staging/script", InputArtifacts: wf.InputArtifactsPath}},
		{"script follows the shared volume", Paths{VarRunArgo: "/x"}, Paths{MainCtrFS: wf.MainCtrFSPath, VarRunArgo: "/x", ScriptPath: "/x/staging/script", InputArtifacts: wf.InputArtifactsPath}},
		{"set fields kept", Paths{MainCtrFS: "/m", VarRunArgo: "/v", ScriptPath: "/s", InputArtifacts: "/i", TempDir: "/t"}, Paths{MainCtrFS: "/m", VarRunArgo: "/v", ScriptPath: "/s", InputArtifacts: "/i", TempDir: "/t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(); got != tt.want {
				t.Errorf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
