package wrapper

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Stage is what `argoexec init` does for emissary pods before anything
// else (EME:54-71): it copies the binary at self (a static build: it runs
// in arbitrary user images) to varRunArgo/argoexec, mode 0555, and writes
// templateJSON to varRunArgo/template, mode 0444, for the wrapped
// containers to read. Each file is written whole before it is renamed into
// place. It also makes varRunArgo/ctr, mode 0777, where each wrapped
// container makes its own directory: the containers of a pod may run as
// different users, and the first to make ctr would otherwise own it 0755.
func Stage(varRunArgo, self, templateJSON string) error {
	ctr := filepath.Join(varRunArgo, "ctr")
	if err := os.MkdirAll(ctr, 0o777); err != nil {
		return fmt.Errorf("emissary: stage: %w", err)
	}
	if err := os.Chmod(ctr, 0o777); err != nil {
		return fmt.Errorf("emissary: stage: %w", err)
	}
	in, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("emissary: stage argoexec: open %s: %w", self, err)
	}
	defer in.Close()
	dst := filepath.Join(varRunArgo, "argoexec")
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("emissary: stage argoexec: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("emissary: stage argoexec: copy %s to %s: %w", self, tmp, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("emissary: stage argoexec: %w", err)
	}
	if err := os.Chmod(tmp, 0o555); err != nil {
		return fmt.Errorf("emissary: stage argoexec: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("emissary: stage argoexec: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(varRunArgo, "template"), []byte(templateJSON), 0o444); err != nil {
		return fmt.Errorf("emissary: stage the template: %w", err)
	}
	return nil
}
