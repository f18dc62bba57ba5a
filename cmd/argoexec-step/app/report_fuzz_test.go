package app

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// FuzzPrintOutputs prints arbitrary text as the outputs annotation that
// wait wrote on the pod. Whatever the annotation holds, the table is valid
// UTF-8 when the annotation is (a long value is cut on a character, not
// inside one), and every parameter and artifact of a valid annotation is
// listed by name.
func FuzzPrintOutputs(f *testing.F) {
	for _, in := range []string{
		`{"parameters":[{"name":"p","value":"42"}],"artifacts":[{"name":"a","s3":{"bucket":"b","key":"k"}}],"result":"hi\n","resultTruncated":true}`,
		`{"parameters":[{"name":"n","value":7},{"name":"none"}],"artifacts":[{"name":"h","http":{"url":"https://x/y"}},{"name":"r","raw":{"data":"abc"}},{"name":"z"}]}`,
		`{"result":"` + strings.Repeat("é", 100) + `"}`,
		`{"result":"a\tb\nc"}`,
		`{"parameters":[{"name":"p","value":"` + strings.Repeat("ü", 61) + `"}]}`,
		`not json`,
		``,
	} {
		f.Add(in, true)
	}
	f.Add(`{}`, false)
	f.Fuzz(func(t *testing.T, annotation string, exited bool) {
		var code *int
		if exited {
			c := 3
			code = &c
		}
		var out bytes.Buffer
		PrintOutputs(&out, annotation, code)
		if utf8.ValidString(annotation) && !utf8.Valid(out.Bytes()) {
			t.Errorf("the table of a UTF-8 annotation is not UTF-8:\n%q", out.String())
		}
		var o workflow.NodeOutputs
		if annotation == "" || json.Unmarshal([]byte(annotation), &o) != nil {
			return
		}
		for _, p := range o.Parameters {
			if !strings.Contains(out.String(), "parameter  "+p.Name) && !strings.Contains(out.String(), "parameter  "+strings.TrimSpace(p.Name)) {
				t.Errorf("parameter %q is not in the table:\n%s", p.Name, out.String())
			}
		}
		for _, a := range o.Artifacts {
			if !strings.Contains(out.String(), a.Name) {
				t.Errorf("artifact %q is not in the table:\n%s", a.Name, out.String())
			}
		}
	})
}
