package workflow

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzDecodeTemplate decodes arbitrary bytes as a template, the way init
// and wait read our annotation (YAML or JSON) and Argo's ARGO_TEMPLATE
// (JSON). A template it accepts must survive a round trip: encoded as JSON
// (what a controller passes on) and decoded again, it is accepted and
// unchanged (an empty list and a missing one are the same: omitempty).
func FuzzDecodeTemplate(f *testing.F) {
	for _, file := range []string{"container.yaml", "script.yaml", "outputs.yaml", "inputs.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		if tmpl, err := DecodeTemplate(data); err == nil {
			js, _ := json.Marshal(tmpl) // the ARGO_TEMPLATE form
			f.Add(js)
		}
	}
	for _, in := range []string{
		"name: a\ncontianer: {image: x}\n",
		"container:\n  image: x\n  imagePullPolic: Always\n",
		"outputs:\n  parameters:\n  - name: p\n    valueFrom: {pth: /x}\n",
		"steps:\n- - name: s\n    inline: {contaner: {}}\n",
		"activeDeadlineSeconds: '{{inputs.parameters.t}}'\n",
		"steps:\n- - name: s\n    inline: {activeDeadlineSeconds: soon}\n",
		"plugin: [1]\n",
		"name: a\nname: b\n",
		"inputs:\n  parameters:\n  - name: p\n    value: [1]\n",
		"container: [\n",
		"activeDeadlineSeconds: '30'\n",
		"activeDeadlineSeconds: 7\n",
		"outputs:\n  parameters:\n  - name: p\n    default: ours\n    valueFrom: {path: /x, default: argo}\n",
		"archiveLocation:\n  archiveLogs: true\n  s3: {bucket: b, endpoint: 'e:9000', key: wf/node, useSDKCreds: true}\n",
		"inputs:\n  artifacts:\n  - {name: a, path: /a, mode: 0755, git: {repo: 'https://x/y.git', revision: v1}}\n",
		"resource: {action: create, successCondition: status.succeeded > 0, manifest: 'kind: Job'}\n",
		"data:\n  source: {artifactPaths: {name: a, s3: {bucket: b}}}\n  transformation: [{expression: 'x'}]\n",
		"inputs:\n  parameters:\n  - {name: num, value: 42}\n  - {name: flag, value: true}\n  - {name: frac, default: 1.5}\n",
		`{"name":"a","container":{"image":"x","resources":{"limits":{"memory":"1Gi"}}},"activeDeadlineSeconds":"30"}`,
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tmpl, err := DecodeTemplate(data)
		if err != nil {
			return
		}
		js, err := json.Marshal(tmpl)
		if err != nil {
			t.Fatalf("encode a decoded template: %v", err)
		}
		again, err := DecodeTemplate(js)
		if err != nil {
			t.Fatalf("a decoded template, encoded as %s, does not decode: %v", js, err)
		}
		if diff := cmp.Diff(tmpl, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed the template (-decoded +again):\n%s", diff)
		}
	})
}

// FuzzDecodeNodeOutputs decodes arbitrary bytes as the outputs annotation
// (workflows.argoproj.io/outputs) that wait writes and the controller
// reads: what decodes must encode and decode back unchanged.
func FuzzDecodeNodeOutputs(f *testing.F) {
	for _, in := range []string{
		`{"parameters":[{"name":"p","value":"42"}],"artifacts":[{"name":"a","s3":{"bucket":"b","key":"k"}}],"result":"hi","resultTruncated":true}`,
		`{"parameters":[{"name":"n","value":7},{"name":"b","value":true}]}`,
		`{"result":null}`,
		`{}`,
		`[]`,
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var o NodeOutputs
		if json.Unmarshal(data, &o) != nil {
			return
		}
		js, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("encode decoded outputs: %v", err)
		}
		var again NodeOutputs
		if err := json.Unmarshal(js, &again); err != nil {
			t.Fatalf("decoded outputs, encoded as %s, do not decode: %v", js, err)
		}
		if diff := cmp.Diff(o, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed the outputs (-decoded +again):\n%s", diff)
		}
	})
}
