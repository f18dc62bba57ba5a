package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParse feeds arbitrary bytes to Parse: a ConfigMap manifest in
// either layout (legacy config key, Argo's per-key) or the bare YAML. A
// configuration it accepts must be a fixed point: encoded as JSON and
// parsed again, it is accepted and unchanged (defaults and validation
// give the same answer twice).
func FuzzParse(f *testing.F) {
	for _, file := range []string{"bare.yaml", "configmap.yaml", "per-key.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, in := range []string{
		"containerRuntimeExecutor: dokcer\n",
		"kubeletPort: 70000\n",
		"kubeletPort: ten\n",
		"kubeletPrt: 10250\n",
		"executor:\n  imag: x\n",
		"kubeletPort: 1\nkubeletPort: 2\n",
		"kubeletInsecure: true\nkubeletCAFile: /ca.crt\n",
		"containerRuntimeExecutors:\n- name: docker\n  selector:\n    matchExpressions: [{key: a, operator: Near, values: [b]}]\n",
		"containerRuntimeExecutors:\n- name: docker\n  selector: {matchLabels: {a: b}}\n- name: kubelet\n  selector: {}\n",
		"executor:\n  env: [{name: FOO, value: x}, {name: ARGO_POD_NAME, value: x}]\n",
		"executor:\n  resources: {limits: {memory: lots}}\n",
		"artifactRepository:\n  s3: {bucket: b, endpoint: e, keyFormat: '{{workflow.uid}}/{{artifact.name}}'}\n",
		"- kubeletPort\n",
		"kind: ConfigMap\napiVersion: v1\nmetadata: {name: c}\ndata:\n  config: |\n    kubeletPort: 1\n  kubeletPort: '2'\n",
		"kind: ConfigMap\napiVersion: v1\nmetadata: {name: c}\ndata:\n  kubeletPort: '[1'\n",
		"kind: Secret\n",
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, testBackends())
		if err != nil {
			return
		}
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("encode a parsed configuration: %v", err)
		}
		again, err := ParseConfig(js, testBackends())
		if err != nil {
			t.Fatalf("a parsed configuration, encoded as %s, does not parse: %v", js, err)
		}
		c.Ignored = nil // not encoded: Argo's keys that this controller does not use
		if diff := cmp.Diff(c, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed the configuration (-parsed +again):\n%s", diff)
		}
	})
}
