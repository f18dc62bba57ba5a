package main

import (
	"strings"
	"testing"
)

const restrictedSC = `{"runAsNonRoot":true,"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},"seccompProfile":{"type":"RuntimeDefault"}}`

func TestRun(t *testing.T) {
	pod := func(mainSC string) string {
		return `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"main","image":"a"` + mainSC +
			`},{"name":"wait","image":"b","securityContext":` + restrictedSC + `}]}}`
	}
	for _, tc := range []struct {
		name, in, level string
		executorOnly    bool
		want            string
	}{
		{"restricted main", pod(`,"securityContext":` + restrictedSC), "restricted", false, "p: admitted by restricted:latest"},
		{"root main", pod(""), "restricted", false, `p: refused by restricted:latest: allowPrivilegeEscalation != false (container "main" must set`},
		{"root main, executor only", pod(""), "restricted", true, "p: admitted by restricted:latest"},
		{"root main, baseline", pod(""), "baseline", false, "p: admitted by baseline:latest"},
		{"list", `{"kind":"List","items":[` + pod("") + `]}`, "restricted", true, "p: admitted by restricted:latest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := run(strings.NewReader(tc.in), &out, tc.level, tc.executorOnly); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out.String(), tc.want) {
				t.Errorf("output %q, want it to start with %q", out.String(), tc.want)
			}
		})
	}
	if err := run(strings.NewReader(`{}`), &strings.Builder{}, "restricted", false); err == nil || !strings.Contains(err.Error(), "no pod") {
		t.Errorf("empty input: error %v, want one saying there is no pod", err)
	}
}
