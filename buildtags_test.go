package argoexec_test

import (
	"bufio"
	"go/build/constraint"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildTags are the only build tags the repository uses: e2e (needs the
// testbed: test/e2e/..., hack/tools/argodemo), bench (the figures of the
// e2e tier, and argoexec's CPU-profiling build) and argoexec_main (the
// argoexec-main binary, hack/build.sh). GOOS/GOARCH and Go versions are not
// tags of ours.
var buildTags = []string{"e2e", "bench", "argoexec_main"}

// benchConstraint is the constraint of every file of test/e2e that holds
// figures: named bench_test.go or *_bench_test.go, and no other file has it.
const benchConstraint = "e2e && bench"

// goBuildLine returns the //go:build expression of a Go file ("" if none).
func goBuildLine(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if constraint.IsGoBuild(line) {
			return line
		}
		if line != "" && !strings.HasPrefix(line, "//") {
			return "" // past the header: the package clause
		}
	}
	return ""
}

// TestBuildTags keeps the repository to its three build tags, and the e2e
// tier's measurement code under bench alone: a figure added to a plain e2e
// file would run on every make test, and a fourth tag would be one more
// build that verify.sh does not vet.
func TestBuildTags(t *testing.T) {
	used := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		line := goBuildLine(t, path)
		if line == "" {
			return nil
		}
		expr, err := constraint.Parse(line)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		expr.Eval(func(tag string) bool {
			used[tag] = append(used[tag], path)
			return true
		})
		base := filepath.Base(path)
		isBenchFile := strings.HasPrefix(filepath.ToSlash(path), "test/e2e/") && (base == "bench_test.go" || strings.HasSuffix(base, "_bench_test.go"))
		if got := expr.String(); isBenchFile != (got == benchConstraint) {
			t.Errorf("%s: //go:build %s: the files named bench_test.go or *_bench_test.go under test/e2e, and only they, are %q", path, got, benchConstraint)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for tag, files := range used {
		if !slices.Contains(buildTags, tag) {
			t.Errorf("build tag %q (in %s) is not one of the repository's %v: reuse one of them (hack/verify.sh vets each)", tag, strings.Join(files, ", "), buildTags)
		}
	}
	for _, tag := range buildTags {
		if len(used[tag]) == 0 {
			t.Errorf("no file uses the build tag %q: take it out of buildTags and hack/verify.sh", tag)
		}
	}
}
