package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryLinksNoTemplate builds argoexec and checks that it cannot run a text/template.
// A binary that can keeps every exported method of every type it links, because the linker
// can no longer tell which ones a template will call: cobra's Version field did that (its
// --version goes through a template), and argoexec grew from 18.5 to 25.0 MB, wait touching
// 4 MiB more of it. pkg/cli.AddVersion prints the version without one.
func TestBinaryLinksNoTemplate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; not with -short")
	}
	goBin := "go" // go test puts its own GOROOT/bin first on PATH
	bin := filepath.Join(t.TempDir(), "argoexec")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(goBin, "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasSuffix(strings.TrimSpace(line), " text/template.(*Template).Execute") {
			t.Fatalf("argoexec links text/template.(*Template).Execute: something runs a template (cobra's Version, SetUsageTemplate, SetHelpTemplate?), which keeps every exported method in the binary; print without one (see pkg/cli.AddVersion). Find the caller with: go build -ldflags=-dumpdep ./cmd/argoexec 2>&1 | grep 'text/template.(\\*Template).Execute'")
		}
	}
}
