package workflow

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestDecodeTemplateRoundTrip checks that templates written as Argo users
// write them decode without losing or changing anything: encoding the
// decoded template gives back the same document (up to empty fields that
// Kubernetes types always print, such as `resources: {}`).
func TestDecodeTemplateRoundTrip(t *testing.T) {
	for _, file := range []string{"container.yaml", "script.yaml", "outputs.yaml", "inputs.yaml"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := DecodeTemplate(data)
			if err != nil {
				t.Fatalf("DecodeTemplate: %v", err)
			}
			out, err := json.Marshal(tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(genericYAML(t, data), prune(genericYAML(t, out))); diff != "" {
				t.Errorf("round trip changed the template (-written +decoded):\n%s", diff)
			}
		})
	}
}

func TestDecodeTemplateFields(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "outputs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := DecodeTemplate(data)
	if err != nil {
		t.Fatal(err)
	}
	p := tmpl.Outputs.Parameters[0]
	if p.Name != "answer" || p.ValueFrom == nil || p.ValueFrom.Path != "/work/out" || p.Default == nil || *p.Default != "0" {
		t.Errorf("output parameter = %+v", p)
	}
	a := tmpl.Outputs.Artifacts[1]
	if a.Archive == nil || a.Archive.None == nil || !a.Optional || a.S3 == nil || a.S3.Key != "explicit/out" {
		t.Errorf("output artifact = %+v", a)
	}
	if lvl := tmpl.Outputs.Artifacts[0].Archive.Tar.CompressionLevel; lvl == nil || *lvl != 1 {
		t.Errorf("compressionLevel = %v, want 1", lvl)
	}
	if m := tmpl.Sidecars[0].MirrorVolumeMounts; m == nil || !*m {
		t.Errorf("mirrorVolumeMounts = %v, want true", m)
	}
}

func TestDecodeTemplateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"unknown top-level field", "name: a\ncontianer: {image: x}\n", `unknown field "contianer"`},
		{"unknown container field", "container:\n  image: x\n  imagePullPolic: Always\n", `unknown field "container.imagePullPolic"`},
		{"unknown script field", "script:\n  image: x\n  sorce: echo\n", `unknown field "script.sorce"`},
		{"unknown parameter field", "outputs:\n  parameters:\n  - name: p\n    valueFrom: {pth: /x}\n", `unknown field "outputs.parameters[0].valueFrom.pth"`},
		{"unknown valueFrom field", "outputs:\n  parameters:\n  - name: p\n    valueFrom: {jsonpath: '{.x}'}\n", `unknown field "outputs.parameters[0].valueFrom.jsonpath"`},
		{"unknown artifact field", "inputs:\n  artifacts:\n  - name: a\n    gti: {repo: x}\n", `unknown field "inputs.artifacts[0].gti"`},
		{"unknown git field", "inputs:\n  artifacts:\n  - name: a\n    git: {rpo: x}\n", `unknown field "inputs.artifacts[0].git.rpo"`},
		{"unknown retryStrategy field", "retryStrategy: {limti: 3}\n", `unknown field "retryStrategy.limti"`},
		{"unknown field in an inline step", "steps:\n- - name: s\n    inline: {contaner: {}}\n", `unknown field "steps[0][0].inline.contaner"`},
		{"deadline not a number", "activeDeadlineSeconds: '{{inputs.parameters.t}}'\n", `activeDeadlineSeconds: "{{inputs.parameters.t}}" is not a whole number of seconds`},
		{"nested deadline not a number", "steps:\n- - name: s\n    inline: {activeDeadlineSeconds: soon}\n", `steps[0][0].inline.activeDeadlineSeconds: "soon" is not a whole number`},
		{"plugin not an object", "plugin: [1]\n", "want an object keyed by the plugin's name"},
		{"duplicate field", "name: a\nname: b\n", `"name" already set`},
		{"wrong type", "activeDeadlineSeconds: soon\n", "activeDeadlineSeconds"},
		{"parameter value of wrong type", "inputs:\n  parameters:\n  - name: p\n    value: [1]\n", "want a string, number or boolean"},
		{"not YAML", "container: [\n", "parse YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeTemplate([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeTemplate error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestDecodeArgoForms checks the fields whose Argo form differs from ours
// in a way the executor cares about.
func TestDecodeArgoForms(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		check    func(*Template) string
	}{
		{"deadline as a string", "activeDeadlineSeconds: '30'\n", func(tm *Template) string {
			if tm.ActiveDeadlineSeconds == nil || *tm.ActiveDeadlineSeconds != 30 {
				return fmt.Sprintf("activeDeadlineSeconds = %v, want 30", tm.ActiveDeadlineSeconds)
			}
			return ""
		}},
		{"deadline as a number", "activeDeadlineSeconds: 7\n", func(tm *Template) string {
			if tm.ActiveDeadlineSeconds == nil || *tm.ActiveDeadlineSeconds != 7 {
				return fmt.Sprintf("activeDeadlineSeconds = %v, want 7", tm.ActiveDeadlineSeconds)
			}
			return ""
		}},
		{"valueFrom.default wins", "outputs:\n  parameters:\n  - name: p\n    default: ours\n    valueFrom: {path: /x, default: argo}\n", func(tm *Template) string {
			if d := tm.Outputs.Parameters[0].OutputDefault(); d == nil || *d != "argo" {
				return fmt.Sprintf("OutputDefault = %v, want argo", d)
			}
			return ""
		}},
		{"default alone", "outputs:\n  parameters:\n  - {name: p, default: ours, valueFrom: {path: /x}}\n", func(tm *Template) string {
			if d := tm.Outputs.Parameters[0].OutputDefault(); d == nil || *d != "ours" {
				return fmt.Sprintf("OutputDefault = %v, want ours", d)
			}
			return ""
		}},
		{"no default", "outputs:\n  parameters:\n  - {name: p, valueFrom: {path: /x}}\n", func(tm *Template) string {
			if d := tm.Outputs.Parameters[0].OutputDefault(); d != nil {
				return fmt.Sprintf("OutputDefault = %v, want nil", *d)
			}
			return ""
		}},
		{"archiveLocation", "archiveLocation:\n  archiveLogs: true\n  s3: {bucket: b, endpoint: 'e:9000', key: wf/node, useSDKCreds: true}\n", func(tm *Template) string {
			l := tm.ArchiveLocation
			if l == nil || l.S3 == nil || l.S3.Key != "wf/node" || !l.S3.UseSDKCreds || l.ArchiveLogs == nil || !*l.ArchiveLogs {
				return fmt.Sprintf("archiveLocation = %+v", l)
			}
			return ""
		}},
		{"artifact location", "inputs:\n  artifacts:\n  - {name: a, path: /a, mode: 0755, git: {repo: 'https://x/y.git', revision: v1}}\n", func(tm *Template) string {
			a := tm.Inputs.Artifacts[0]
			if l := a.Location(); l.Git == nil || l.Git.Revision != "v1" || a.Mode == nil || *a.Mode != 0o755 {
				return fmt.Sprintf("artifact = %+v", a)
			}
			return ""
		}},
		{"resource", "resource: {action: create, successCondition: status.succeeded > 0, manifest: 'kind: Job'}\n", func(tm *Template) string {
			if r := tm.Resource; r == nil || r.Action != "create" || r.SuccessCondition != "status.succeeded > 0" {
				return fmt.Sprintf("resource = %+v", r)
			}
			return ""
		}},
		{"data", "data:\n  source: {artifactPaths: {name: a, s3: {bucket: b}}}\n  transformation: [{expression: 'filter(data, {# endsWith \\\".py\\\"})'}]\n", func(tm *Template) string {
			d := tm.Data
			if d == nil || d.Source.ArtifactPaths == nil || d.Source.ArtifactPaths.S3 == nil || len(d.Transformation) != 1 {
				return fmt.Sprintf("data = %+v", d)
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := DecodeTemplate([]byte(tc.in))
			if err != nil {
				t.Fatalf("DecodeTemplate: %v", err)
			}
			if msg := tc.check(tmpl); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestAnyStringAcceptsScalars(t *testing.T) {
	tmpl, err := DecodeTemplate([]byte("inputs:\n  parameters:\n  - {name: num, value: 42}\n  - {name: flag, value: true}\n  - {name: frac, default: 1.5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{tmpl.Inputs.Parameters[0].Value.String(), tmpl.Inputs.Parameters[1].Value.String(), tmpl.Inputs.Parameters[2].Default.String()}
	if diff := cmp.Diff([]string{"42", "true", "1.5"}, got); diff != "" {
		t.Error(diff)
	}
}

func TestNodeOutputsJSONNames(t *testing.T) {
	code, result := 3, "hi"
	out, err := json.Marshal(NodeOutputs{
		Parameters: []Parameter{{Name: "p", Value: AnyStringPtr("v")}},
		Artifacts:  []Artifact{{Name: "a", S3: &S3Artifact{Key: "k"}}},
		Result:     &result,
		ExitCode:   &code,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"parameters":[{"name":"p","value":"v"}],"artifacts":[{"name":"a","s3":{"key":"k"}}],"result":"hi","exitCode":3}`
	if string(out) != want {
		t.Errorf("NodeOutputs JSON =\n%s\nwant\n%s", out, want)
	}
}

func TestKeyFormat(t *testing.T) {
	if got := UnknownKeyFormatVariables("{{workflow.name}}/{{wf.name}}/{{ pod.name }}/{{x}}"); !cmp.Equal(got, []string{"wf.name", "x"}) {
		t.Errorf("UnknownKeyFormatVariables = %v", got)
	}
	got, err := ExpandKeyFormat(DefaultKeyFormat, map[string]string{KeyVarWorkflowName: "wf", KeyVarPodName: "pod", KeyVarArtifactName: "art"})
	if err != nil || got != "wf/pod/art.tgz" {
		t.Errorf("ExpandKeyFormat = %q, %v", got, err)
	}
	if _, err := ExpandKeyFormat(DefaultKeyFormat, nil); err == nil || !strings.Contains(err.Error(), "workflow.name") {
		t.Errorf("ExpandKeyFormat with no vars: error = %v, want it to name workflow.name", err)
	}
}

func genericYAML(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// prune drops empty strings, maps and lists, which typed Kubernetes structs
// print although nobody wrote them.
func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			// `none: {}` and `emptyDir: {}` are meaningful; other empties are not.
			if p := prune(e); !isEmpty(p) || k == "none" || k == "emptyDir" {
				out[k] = p
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(v))
		for _, e := range v {
			out = append(out, prune(e))
		}
		return out
	}
	return v
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
