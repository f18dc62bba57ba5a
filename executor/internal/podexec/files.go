package podexec

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/argoexec/argoexec/pkg/archive"
)

// errTooLarge stops a GetFileContents read that went past its limit.
var errTooLarge = errors.New("file is larger than the limit")

// GetFileContents returns the contents of the file at path in container,
// read as a one-entry tar stream (`tar -C dir -chf - base`, following a
// symbolic link as cat would) over an exec session. tar rather than cat
// because its header carries the size: an exec session whose connection
// drops ends without an error, and a truncated read must not pass for the
// file. A file larger than wf.MaxFileBytes (256 KiB, all the outputs
// annotation can hold) is an error that says so (nothing is
// buffered past the header); a directory is an error; a missing or
// unreadable file is an error carrying tar's stderr.
func (c *Engine) GetFileContents(ctx context.Context, container, path string) (string, error) {
	s, err := c.getFileContents(ctx, container, path, c.maxFileBytes)
	if err != nil {
		return "", fmt.Errorf("%s: read %s in container %q of pod %s: %w", c.cfg.Backend, path, container, c.cfg.Pod, err)
	}
	return s, nil
}

func (c *Engine) getFileContents(ctx context.Context, container, p string, maxBytes int64) (string, error) {
	dir, base := splitPath(p)
	if strings.HasPrefix(base, "-") {
		base = "./" + base // not an option
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	stderr := newTail()
	execDone := make(chan error, 1)
	go func() {
		err := c.cfg.Exec.Exec(ctx, container, []string{"tar", "-C", dir, "-chf", "-", base}, nil, pw, stderr)
		pw.CloseWithError(err)
		execDone <- err
	}()
	contents, readErr := readOneFile(pr, maxBytes)
	if readErr == nil {
		if n, _ := io.Copy(io.Discard, io.LimitReader(pr, drainLimit)); n == drainLimit {
			readErr = fmt.Errorf("the remote tar wrote more than %d bytes after the file", drainLimit)
		}
	}
	if readErr != nil {
		cancel()
	}
	pr.CloseWithError(errors.New("read stopped"))
	execErr := <-execDone
	switch {
	case errors.Is(readErr, errTooLarge) || errors.Is(readErr, errNotRegular):
		return "", readErr
	case execErr != nil:
		if err := ctx.Err(); err != nil && readErr == nil {
			return "", err
		}
		return "", notExist(fmt.Errorf("%w%s", withStderr(execErr, stderr), binaryHint(execErr, "tar")), stderr)
	case readErr != nil:
		return "", readErr
	}
	return contents, nil
}

// errNotRegular is returned by readOneFile for an entry that is not a
// regular file.
var errNotRegular = errors.New("not a regular file")

// readOneFile reads the first entry of a tar stream, which must be a
// regular file of at most max bytes, and returns its contents.
func readOneFile(r io.Reader, max int64) (string, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return "", fmt.Errorf("the tar stream holds no file: %w", io.ErrUnexpectedEOF)
	}
	if err != nil {
		return "", fmt.Errorf("read tar header: %w", err)
	}
	if hdr.Typeflag != tar.TypeReg {
		what := "of type " + string(hdr.Typeflag)
		if hdr.Typeflag == tar.TypeDir {
			what = "a directory"
		}
		return "", fmt.Errorf("%w: it is %s", errNotRegular, what)
	}
	if hdr.Size > max {
		return "", fmt.Errorf("%w (%d bytes, the limit is %d); pass large outputs as artifacts, not parameters", errTooLarge, hdr.Size, max)
	}
	buf := make([]byte, hdr.Size)
	if _, err := io.ReadFull(tr, buf); err != nil {
		return "", fmt.Errorf("read the file's %d bytes: %w", hdr.Size, err)
	}
	return string(buf), nil
}

// drainLimit is how much a remote tar may write after its end-of-archive
// marker (tar pads its output to a 10 KiB record) before CopyFile stops it.
const drainLimit = 1 << 20

// CopyFile copies srcPath (a file or a directory) out of container into
// destPath, a local gzip-compressed tar at compressionLevel, with entries
// rooted at the base name of srcPath. It runs `tar -C dir -cf - base` in the
// container and streams its output through an io.Pipe into archive.RepackFile,
// which checks every entry (names, link targets), compresses it and renames
// the finished file to destPath: memory use does not depend on the size of the
// copy. On any error destPath is removed.
//
// Errors name the pod, container and path and carry the tail of the remote
// tar's stderr (a missing path, a path that is not readable); an exec that
// cannot start tar says the container needs one.
func (c *Engine) CopyFile(ctx context.Context, container, srcPath, destPath string, compressionLevel int) error {
	if err := c.copyFile(ctx, container, srcPath, destPath, compressionLevel); err != nil {
		_ = os.Remove(destPath)
		return fmt.Errorf("%s: copy %s from container %q of pod %s to %s: %w", c.cfg.Backend, srcPath, container, c.cfg.Pod, destPath, err)
	}
	return nil
}

func (c *Engine) copyFile(ctx context.Context, container, srcPath, destPath string, level int) error {
	dir, base := splitPath(srcPath)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	stderr := newTail()
	execDone := make(chan error, 1)
	go func() {
		err := c.cfg.Exec.Exec(ctx, container, []string{"tar", "-C", dir, "-cf", "-", base}, nil, pw, stderr)
		pw.CloseWithError(err) // nil: readers see io.EOF
		execDone <- err
	}()

	in := &countingReader{r: pr}
	repackErr := archive.RepackFile(ctx, in, destPath, level)
	if repackErr == nil {
		// tar.Reader stops at the end-of-archive marker; let the remote tar
		// finish writing its padding so it can exit.
		if n, _ := io.Copy(io.Discard, io.LimitReader(pr, drainLimit)); n == drainLimit {
			repackErr = fmt.Errorf("the remote tar wrote more than %d bytes after its end-of-archive marker", drainLimit)
		}
	}
	if repackErr != nil {
		cancel()
	}
	pr.CloseWithError(errors.New("copy stopped")) // unblocks a remote side still writing
	execErr := <-execDone

	switch {
	case errors.Is(repackErr, archive.ErrUnsafeEntry):
		return repackErr // the exec error is only our cancellation
	case execErr != nil:
		if err := ctx.Err(); err != nil && repackErr == nil {
			return err
		}
		return notExist(fmt.Errorf("%w%s", withStderr(execErr, stderr), binaryHint(execErr, "tar")), stderr)
	case errors.Is(repackErr, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the exec session ended without an error after %d bytes of the tar stream, so the connection closed "+
			"before the end of it (the container runtime's streaming server, the kubelet or the API server cut it); the copy can be run again", repackErr, in.n)
	case repackErr != nil:
		return repackErr
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// splitPath splits a container path into the directory tar changes into and
// the name it archives.
func splitPath(p string) (dir, base string) {
	p = path.Clean(p)
	if p == "/" {
		return "/", "."
	}
	return path.Dir(p), path.Base(p)
}

// binaryHint adds a hint to an exec error that suggests the command could
// not be started at all: a transport-level error, or exit code 126/127
// (found but not executable / not found, as shells report them).
func binaryHint(err error, binary string) string {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || IsForbidden(err) {
		return ""
	}
	code, ok := exitCode(err)
	if ok && code != 126 && code != 127 {
		return ""
	}
	return fmt.Sprintf(" (if the container has no %q on its PATH, it cannot be read through exec)", binary)
}

// notExist wraps fs.ErrNotExist around err when the remote tar said the path
// does not exist, as executor.ContainerRuntimeExecutor promises for a
// missing path. The remote stderr is the only witness: tar (GNU and busybox
// alike) prints strerror(ENOENT) there.
func notExist(err error, stderr *tailBuffer) error {
	if strings.Contains(stderr.String(), "No such file or directory") {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}
