package argoexec_test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/config"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite "+configDoc+"'s generated tables from the code")

// configDoc is the configuration reference that the README links to.
const configDoc = "docs/configuration.md"

// TestReadmeTablesMatchCode keeps the configuration reference's tables of
// ConfigMap keys and environment variables equal to what the code documents
// (config.Keys, workflow.EnvVars), and the README linking to it. Run
// `go test . -update-readme` after changing either.
func TestReadmeTablesMatchCode(t *testing.T) {
	readmeText, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readmeText), "("+configDoc+")") {
		t.Errorf("README.md does not link to %s", configDoc)
	}
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	want := readme
	want = replaceBlock(t, want, "CONFIG KEYS", configTable())
	want = replaceBlock(t, want, "ENV VARS", envTable())
	if want == readme {
		return
	}
	if *updateReadme {
		if err := os.WriteFile(configDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's generated tables differ from the code; run `go test . -update-readme`.\nwant:\n%s\n%s", configDoc, configTable(), envTable())
}

func replaceBlock(t *testing.T, doc, name, body string) string {
	t.Helper()
	re := regexp.MustCompile(`(?s)(<!-- BEGIN ` + name + ` -->\n).*?(<!-- END ` + name + ` -->)`)
	if !re.MatchString(doc) {
		t.Fatalf("%s has no <!-- BEGIN %s --> ... <!-- END %s --> block", configDoc, name, name)
	}
	return re.ReplaceAllLiteralString(doc, "<!-- BEGIN "+name+" -->\n"+body+"<!-- END "+name+" -->")
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func configTable() string {
	var sb strings.Builder
	sb.WriteString("| key | default | what it does |\n|---|---|---|\n")
	for _, k := range config.Keys() {
		def := ""
		if k.Default != "" {
			def = "`" + k.Default + "`"
		}
		fmt.Fprintf(&sb, "| `%s` | %s | %s |\n", k.Key, def, cell(k.Doc))
	}
	return sb.String()
}

func envTable() string {
	var sb strings.Builder
	sb.WriteString("| variable | set on | what it holds |\n|---|---|---|\n")
	for _, e := range wf.EnvVars() {
		fmt.Fprintf(&sb, "| `%s` | %s | %s |\n", e.Name, e.Who, cell(e.Doc))
	}
	return sb.String()
}
