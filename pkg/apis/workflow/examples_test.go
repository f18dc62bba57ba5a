package workflow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// argoExamplesDir holds every *.yaml and *.yml of Argo Workflows v3.3.8's
// examples/, byte for byte (hack/update-argo-examples.sh copies them from
// the Go module github.com/argoproj/argo-workflows/v3@v3.3.8; its --check,
// in hack/verify.sh, fails when they differ).
const argoExamplesDir = "testdata/argo-examples"

// exampleTemplate is one template of one example document.
type exampleTemplate struct {
	file, kind, name string
	raw              json.RawMessage
}

// templateKind is the kind of a template by the field that makes it one.
func templateKind(raw json.RawMessage) string {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		return "?"
	}
	for _, k := range []string{"container", "script", "resource", "data", "containerSet", "steps", "dag", "suspend", "http", "plugin"} {
		if _, ok := probe[k]; ok {
			return k
		}
	}
	return "none"
}

// exampleTemplates lists every template of every Workflow, WorkflowTemplate,
// ClusterWorkflowTemplate and CronWorkflow in dir's YAML files, each
// multi-document file document by document.
func exampleTemplates(t *testing.T, dir string) []exampleTemplate {
	t.Helper()
	var out []exampleTemplate
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return err
			}
			var obj struct {
				Kind string `json:"kind"`
				Spec struct {
					Templates    []json.RawMessage `json:"templates"`
					WorkflowSpec struct {
						Templates []json.RawMessage `json:"templates"`
					} `json:"workflowSpec"`
				} `json:"spec"`
			}
			if json.Unmarshal(js, &obj) != nil || !slices.Contains([]string{"Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"}, obj.Kind) {
				continue
			}
			for _, raw := range append(obj.Spec.Templates, obj.Spec.WorkflowSpec.Templates...) {
				var named struct {
					Name string `json:"name"`
				}
				_ = json.Unmarshal(raw, &named)
				out = append(out, exampleTemplate{file: rel, kind: templateKind(raw), name: named.Name, raw: raw})
			}
		}
	})
	if err != nil {
		t.Fatalf("read Argo's examples: %v", err)
	}
	return out
}

// TestDecodeArgoExamples decodes, strictly, every template in Argo
// v3.3.8's examples/: Argo accepts each one, so must we. Container and
// script templates (the pods argoexec runs in) and resource and data
// templates (that it runs as main) are counted apart; every other kind
// (steps, dag, suspend, ...) must decode too.
func TestDecodeArgoExamples(t *testing.T) {
	templates := exampleTemplates(t, argoExamplesDir)
	counts := map[string]int{}
	for _, et := range templates {
		counts[et.kind]++
		if _, err := DecodeTemplate(et.raw); err != nil {
			t.Errorf("examples/%s: template %q (%s): %v", et.file, et.name, et.kind, err)
		}
	}
	t.Logf("decoded %d templates from Argo's examples: %v", len(templates), counts)
	// Guard against a walk that finds nothing (or far less than is there).
	if counts["container"]+counts["script"] < 240 || counts["resource"] < 5 || counts["data"] < 1 {
		t.Errorf("found %d container/script, %d resource and %d data templates in Argo's examples, want >= 240, 5 and 1: the walk missed files",
			counts["container"]+counts["script"], counts["resource"], counts["data"])
	}
}
