package executortest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/internal/backoff"
)

// Container is one container of the pod the conformance suite runs: a name
// and a POSIX shell script that the backend's Env runs as the container's
// command (`/bin/sh -c Script`) in an image with busybox (sh, tar, kill,
// printf, yes, head, sleep).
type Container struct {
	Name   string
	Script string
}

// Env is what a backend's e2e test gives RunConformance.
type Env struct {
	// Backend names the backend in failure messages.
	Backend string
	// Start runs containers as the containers of one pod (or, for docker, a
	// group of containers labelled as one pod), registers their clean-up with
	// t.Cleanup, and returns an executor bound to that pod. It returns once
	// every container has been created; the suite itself waits until each
	// long-running container has finished its set-up.
	Start func(t *testing.T, containers []Container) executor.ContainerRuntimeExecutor
	// SignalsFromOutside says that Kill signals from outside the container's
	// PID namespace, so it must stop a PID 1 that ignores SIGTERM. Backends
	// that signal from inside (exec `kill`) must instead return an error
	// wrapping executor.ErrPID1Survived that names the container.
	SignalsFromOutside bool
	// Timeout bounds every single operation of the suite; zero means 60 s.
	Timeout time.Duration
}

// Sizes and contents the suite's containers write.
const (
	bigFileSize  = 64 << 20
	bigFileLine  = "0123456789abcdef\n"
	smallContent = "small file\n"
	readyFile    = "/tmp/ready"
)

// loopForever keeps a shell responsive to trapped signals: `wait` returns
// when a trapped signal arrives, `sleep` alone would delay it.
const loopForever = `while true; do sleep 1 & wait $!; done`

// Containers returns the containers RunConformance starts. Backends whose
// Env needs to know them up front (to build images or pods) may call it.
func Containers() []Container {
	return []Container{
		{Name: "files", Script: strings.Join([]string{
			`trap 'exit 0' TERM`,
			`printf 'small file\n' > /tmp/small.txt`,
			`i=0; while [ $i -lt 256 ]; do printf "\\$(printf %o $i)"; i=$((i+1)); done > /tmp/binary.bin`,
			`mkdir -p /tmp/dir/sub && printf 'a\n' > /tmp/dir/a.txt && printf 'b\n' > /tmp/dir/sub/b.txt`,
			fmt.Sprintf(`yes 0123456789abcdef | head -c %d > /tmp/big.bin`, bigFileSize),
			`touch ` + readyFile,
			loopForever,
		}, "\n")},
		{Name: "exit0", Script: "echo bye-stdout; echo bye-stderr >&2; exit 0"},
		{Name: "exit3", Script: "echo failing; exit 3"},
		{Name: "term", Script: "trap 'exit 0' TERM; touch " + readyFile + "; " + loopForever},
		{Name: "ignore", Script: "trap '' TERM; touch " + readyFile + "; " + loopForever},
		// PID 1 ignores SIGTERM but exits once its child (which ignores it
		// too) is SIGKILLed: the exec backends' SIGKILL to every process but
		// PID 1 must stop it. The echo keeps the shell from exec'ing sleep.
		{Name: "ignorechild", Script: "trap '' TERM; touch " + readyFile + "; sleep 100000; echo child killed"},
		{Name: "running", Script: "trap 'exit 0' TERM; touch " + readyFile + "; " + loopForever},
	}
}

// RunConformance runs the behaviour every ContainerRuntimeExecutor must have
// against a real backend. Each case asserts contents and error texts, not
// just the absence of an error.
func RunConformance(t *testing.T, env Env) {
	t.Helper()
	if env.Timeout == 0 {
		env.Timeout = 60 * time.Second
	}
	s := &suite{env: env}
	s.x = env.Start(t, Containers())
	for _, c := range []string{"files", "term", "ignore", "ignorechild", "running"} {
		s.waitReady(t, c)
	}

	t.Run("ListContainerNames", s.listContainerNames)
	t.Run("GetFileContents/small", s.readSmall)
	t.Run("GetFileContents/binary", s.readBinary)
	t.Run("GetFileContents/missing", s.readMissing)
	t.Run("CopyFile/file", s.copyFile)
	t.Run("CopyFile/directory", s.copyDir)
	t.Run("CopyFile/64MiB", s.copyBig)
	t.Run("CopyFile/missing", s.copyMissing)
	t.Run("Wait/finished", s.waitFinished)
	t.Run("GetExitCode", s.exitCodes)
	t.Run("GetExitCode/running", s.exitCodeRunning)
	t.Run("GetOutputStream", s.logs)
	t.Run("Wait/running", s.waitRunning)
	t.Run("Kill/exitsOnTERM", s.killTerm)
	t.Run("Kill/ignoresTERM", s.killIgnore)
	t.Run("Kill/ignoresTERMChildKilled", s.killIgnoreChild)
}

// KillContainers returns the containers RunKillConformance starts.
func KillContainers() []Container {
	var out []Container
	for _, c := range Containers() {
		switch c.Name {
		case "term", "ignore", "ignorechild":
			out = append(out, c)
		}
	}
	return out
}

// RunKillConformance runs only the suite's Kill cases, on the containers
// KillContainers returns: for an image other than the suite's busybox one
// (Kill's commands run in the image's own /bin/sh, dash on Debian and
// Ubuntu).
func RunKillConformance(t *testing.T, env Env) {
	t.Helper()
	if env.Timeout == 0 {
		env.Timeout = 60 * time.Second
	}
	s := &suite{env: env}
	s.x = env.Start(t, KillContainers())
	for _, c := range []string{"term", "ignore", "ignorechild"} {
		s.waitReady(t, c)
	}
	t.Run("Kill/exitsOnTERM", s.killTerm)
	t.Run("Kill/ignoresTERM", s.killIgnore)
	t.Run("Kill/ignoresTERMChildKilled", s.killIgnoreChild)
}

type suite struct {
	env Env
	x   executor.ContainerRuntimeExecutor
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.env.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// waitReady polls, with backoff and a bound, until the container has written
// its ready file: that is the only way to know its set-up is done.
func (s *suite) waitReady(t *testing.T, container string) {
	t.Helper()
	ctx := s.ctx(t)
	var lastErr error
	delays := backoff.Exponential(clock.RealClock{}, 50*time.Millisecond, time.Second)
	for {
		if _, err := s.x.GetFileContents(ctx, container, readyFile); err == nil {
			return
		} else {
			lastErr = err
		}
		if delays.Wait(ctx) != nil {
			t.Fatalf("%s: container %q never wrote %s within %s: last error: %v", s.env.Backend, container, readyFile, s.env.Timeout, lastErr)
		}
	}
}

func (s *suite) listContainerNames(t *testing.T) {
	names, err := s.x.ListContainerNames(s.ctx(t))
	if err != nil {
		t.Fatalf("ListContainerNames: %v", err)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, c := range Containers() {
		if !have[c.Name] {
			t.Errorf("ListContainerNames = %v: missing %q", names, c.Name)
		}
	}
}

func (s *suite) readSmall(t *testing.T) {
	got, err := s.x.GetFileContents(s.ctx(t), "files", "/tmp/small.txt")
	if err != nil {
		t.Fatalf("GetFileContents: %v", err)
	}
	if got != smallContent {
		t.Errorf("GetFileContents = %q, want %q", got, smallContent)
	}
}

func (s *suite) readBinary(t *testing.T) {
	got, err := s.x.GetFileContents(s.ctx(t), "files", "/tmp/binary.bin")
	if err != nil {
		t.Fatalf("GetFileContents: %v", err)
	}
	want := make([]byte, 256)
	for i := range want {
		want[i] = byte(i)
	}
	if !bytes.Equal([]byte(got), want) {
		t.Errorf("GetFileContents of 256 bytes 0..255: got %d bytes, first difference at %d", len(got), firstDiff([]byte(got), want))
	}
}

func (s *suite) readMissing(t *testing.T) {
	_, err := s.x.GetFileContents(s.ctx(t), "files", "/nonexistent/missing.txt")
	assertErrorNames(t, err, "files", "/nonexistent/missing.txt")
}

func (s *suite) copyFile(t *testing.T) {
	entries := s.copyAndRead(t, "files", "/tmp/small.txt", gzip.DefaultCompression)
	assertEntries(t, entries, map[string]string{"small.txt": smallContent})
}

func (s *suite) copyDir(t *testing.T) {
	entries := s.copyAndRead(t, "files", "/tmp/dir", gzip.DefaultCompression)
	assertEntries(t, entries, map[string]string{
		"dir/":          "",
		"dir/a.txt":     "a\n",
		"dir/sub/":      "",
		"dir/sub/b.txt": "b\n",
	})
}

func (s *suite) copyBig(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "big.tgz")
	if err := s.x.CopyFile(s.ctx(t), "files", "/tmp/big.bin", dest, gzip.BestSpeed); err != nil {
		t.Fatalf("CopyFile: %v", err)
	}
	want := sha256.New()
	for n := 0; n < bigFileSize; n += len(bigFileLine) {
		io.WriteString(want, bigFileLine[:min(len(bigFileLine), bigFileSize-n)])
	}
	f, err := os.Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("open %s as gzip: %v", dest, err)
	}
	tr := tar.NewReader(zr)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatalf("read first tar entry: %v", err)
	}
	if hdr.Name != "big.bin" || hdr.Size != bigFileSize {
		t.Fatalf("entry %q of %d bytes, want big.bin of %d", hdr.Name, hdr.Size, bigFileSize)
	}
	got := sha256.New()
	if n, err := io.Copy(got, tr); err != nil || n != bigFileSize {
		t.Fatalf("read big.bin: %d bytes, %v", n, err)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Errorf("big.bin content differs from what the container wrote")
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("after big.bin: want end of archive, got %v", err)
	}
}

func (s *suite) copyMissing(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "missing.tgz")
	err := s.x.CopyFile(s.ctx(t), "files", "/nonexistent/dir", dest, gzip.DefaultCompression)
	assertErrorNames(t, err, "files", "/nonexistent/dir")
}

func (s *suite) waitFinished(t *testing.T) {
	ctx := s.ctx(t)
	if err := s.x.Wait(ctx, []string{"exit0", "exit3"}); err != nil {
		t.Fatalf("Wait(exit0, exit3): %v", err)
	}
	// They were long finished: a second Wait must return at once.
	start := time.Now()
	if err := s.x.Wait(ctx, []string{"exit0", "exit3"}); err != nil {
		t.Fatalf("second Wait(exit0, exit3): %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Wait on finished containers took %s, want < 5s", d)
	}
}

func (s *suite) exitCodes(t *testing.T) {
	for name, want := range map[string]int{"exit0": 0, "exit3": 3} {
		got, err := s.x.GetExitCode(s.ctx(t), name)
		if err != nil {
			t.Errorf("GetExitCode(%s): %v", name, err)
			continue
		}
		if got != want {
			t.Errorf("GetExitCode(%s) = %d, want %d", name, got, want)
		}
	}
}

func (s *suite) exitCodeRunning(t *testing.T) {
	_, err := s.x.GetExitCode(s.ctx(t), "running")
	assertErrorNames(t, err, "running")
}

func (s *suite) logs(t *testing.T) {
	for _, combined := range []bool{false, true} {
		rc, err := s.x.GetOutputStream(s.ctx(t), "exit0", combined)
		if errors.Is(err, executor.ErrNotSupported) {
			t.Logf("GetOutputStream(combined=%v): %v", combined, err)
			continue
		}
		if err != nil {
			t.Fatalf("GetOutputStream(combined=%v): %v", combined, err)
		}
		out, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("read log (combined=%v): %v", combined, err)
		}
		if !strings.Contains(string(out), "bye-stdout\n") {
			t.Errorf("log (combined=%v) = %q: missing stdout line", combined, out)
		}
		if combined && !strings.Contains(string(out), "bye-stderr\n") {
			t.Errorf("combined log = %q: missing stderr line", out)
		}
	}
}

func (s *suite) waitRunning(t *testing.T) {
	ctx, cancel := context.WithTimeout(s.ctx(t), 2*time.Second)
	defer cancel()
	start := time.Now()
	err := s.x.Wait(ctx, []string{"running"})
	if err == nil {
		t.Fatalf("Wait on a running container returned nil after %s; want it to block until ctx ends", time.Since(start))
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait after ctx deadline: %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Wait took %s to honour a 2s ctx", d)
	}
}

func (s *suite) killTerm(t *testing.T) {
	ctx := s.ctx(t)
	start := time.Now()
	if err := s.x.Kill(ctx, []string{"term"}, 10*time.Second); err != nil {
		t.Fatalf("Kill(term): %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Kill of a container that exits on SIGTERM took %s, want < 2s", d)
	}
	if err := s.x.Wait(ctx, []string{"term"}); err != nil {
		t.Fatalf("Wait(term) after Kill: %v", err)
	}
	// Killing it again is a no-op.
	if err := s.x.Kill(ctx, []string{"term"}, time.Second); err != nil {
		t.Errorf("Kill of an already terminated container: %v", err)
	}
}

func (s *suite) killIgnore(t *testing.T) {
	const grace = 3 * time.Second
	ctx := s.ctx(t)
	start := time.Now()
	err := s.x.Kill(ctx, []string{"ignore"}, grace)
	d := time.Since(start)
	if d > grace+2*time.Second {
		t.Errorf("Kill with grace %s took %s, want < grace + 2s", grace, d)
	}
	switch {
	case err == nil:
		waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if werr := s.x.Wait(waitCtx, []string{"ignore"}); werr != nil {
			t.Errorf("Kill returned nil but container ignore did not terminate: %v", werr)
		}
	case s.env.SignalsFromOutside:
		t.Errorf("Kill(ignore): %v; this backend signals from outside the container and must stop it", err)
	default:
		if !errors.Is(err, executor.ErrPID1Survived) {
			t.Errorf("Kill(ignore) = %v, want an error wrapping executor.ErrPID1Survived", err)
		}
		assertErrorNames(t, err, "ignore", "PID 1", "SIGTERM")
	}
}

// killIgnoreChild: PID 1 ignores SIGTERM and waits for a child that
// ignores it too. Every backend must stop it: from outside, or from inside
// by SIGKILLing every process but PID 1, after which PID 1 exits.
func (s *suite) killIgnoreChild(t *testing.T) {
	const grace = 2 * time.Second
	ctx := s.ctx(t)
	start := time.Now()
	if err := s.x.Kill(ctx, []string{"ignorechild"}, grace); err != nil {
		t.Fatalf("Kill(ignorechild) after %s: %v; its PID 1 exits once its child is SIGKILLed, so Kill must stop it", time.Since(start), err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.x.Wait(waitCtx, []string{"ignorechild"}); err != nil {
		t.Errorf("Kill(ignorechild) returned nil but the container did not terminate: %v", err)
	}
}

// copyAndRead runs CopyFile into a temporary .tgz and returns its entries:
// name -> content, directories with a trailing slash and empty content.
func (s *suite) copyAndRead(t *testing.T, container, src string, level int) map[string]string {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "out.tgz")
	if err := s.x.CopyFile(s.ctx(t), container, src, dest, level); err != nil {
		t.Fatalf("CopyFile(%s, %s): %v", container, src, err)
	}
	f, err := os.Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("open %s as gzip: %v", dest, err)
	}
	tr := tar.NewReader(zr)
	entries := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatalf("read tar entries: %v", err)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		if hdr.Typeflag == tar.TypeDir {
			entries[strings.TrimSuffix(name, "/")+"/"] = ""
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read entry %s: %v", name, err)
		}
		entries[name] = string(b)
	}
}

func assertEntries(t *testing.T, got, want map[string]string) {
	t.Helper()
	var gotNames, wantNames []string
	for n := range got {
		gotNames = append(gotNames, n)
	}
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(gotNames)
	sort.Strings(wantNames)
	if strings.Join(gotNames, ",") != strings.Join(wantNames, ",") {
		t.Fatalf("archive entries = %v, want %v", gotNames, wantNames)
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("entry %s = %q, want %q", n, got[n], w)
		}
	}
}

// assertErrorNames fails unless err is non-nil and its text contains every
// one of words: errors must say what failed and where.
func assertErrorNames(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one naming %q", words)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
