package argo

import (
	"io"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/argoexec/argoexec/executor/protocol"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestFlowIncludesResult: wait reports main's stdout when the controller
// asks for it (ARGO_INCLUDE_SCRIPT_OUTPUT) and the template has a result
// (Argo's Template.HasOutput): a container, a script, or a containerSet
// with a container named main.
func TestFlowIncludesResult(t *testing.T) {
	set := func(names ...string) *wf.ContainerSetTemplate {
		cs := &wf.ContainerSetTemplate{}
		for _, n := range names {
			cs.Containers = append(cs.Containers, wf.ContainerNode{Container: corev1.Container{Name: n}})
		}
		return cs
	}
	for _, tc := range []struct {
		name    string
		asked   bool
		tmpl    wf.Template
		include bool
	}{
		{"container", true, wf.Template{Container: &corev1.Container{}}, true},
		{"script", true, wf.Template{Script: &wf.ScriptTemplate{}}, true},
		{"containerSet with main", true, wf.Template{ContainerSet: set("a", "main")}, true},
		{"containerSet without main", true, wf.Template{ContainerSet: set("a", "b")}, false},
		{"not asked", false, wf.Template{Container: &corev1.Container{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Protocol{IncludeScriptOutput: tc.asked, ScratchRoot: t.TempDir()}
			l := logrus.New()
			l.SetOutput(io.Discard)
			parts, err := p.Flow(protocol.Request{Command: "wait", Template: &tc.tmpl, Log: logrus.NewEntry(l)})
			if err != nil {
				t.Fatalf("Flow: %v", err)
			}
			got := parts.Config.Protocol.IncludeScriptOutput
			if got == nil {
				t.Fatal("IncludeScriptOutput is nil: the flow would guess from the template")
			}
			if *got != tc.include {
				t.Errorf("IncludeScriptOutput = %v, want %v", *got, tc.include)
			}
		})
	}
}
