package podexec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"

	"github.com/argoexec/argoexec/pkg/archive"
)

// errTooLarge stops a GetFileContents read that went past its limit.
var errTooLarge = errors.New("file is larger than the limit")

// GetFileContents returns the contents of the regular file at path in
// container, read with `cat` over an exec session. A file longer than
// maxBytes is an error that says so (the read is stopped there, not
// buffered); a missing or unreadable file is an error carrying cat's stderr.
func (c *Client) GetFileContents(ctx context.Context, container, path string, maxBytes int64) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &limitedBuffer{max: maxBytes, full: cancel}
	stderr := newTail()
	err := c.Exec.Exec(ctx, container, []string{"cat", "--", path}, nil, out, stderr)
	contents, exceeded := out.result()
	if exceeded {
		return "", fmt.Errorf("%s: read %s in container %q of pod %s: %w (%d bytes); pass large outputs as artifacts, not parameters",
			c.Backend, path, container, c.Pod, errTooLarge, maxBytes)
	}
	if err != nil {
		return "", fmt.Errorf("%s: read %s in container %q of pod %s: %w%s",
			c.Backend, path, container, c.Pod, withStderr(err, stderr), binaryHint(err, "cat"))
	}
	return contents, nil
}

// limitedBuffer holds at most max bytes; a write past that fails and calls
// full, which ends the exec session.
// It is safe for concurrent use: a transport may still be writing when
// the session it serves is abandoned.
type limitedBuffer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	max      int64
	exceeded bool
	full     func()
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int64(l.buf.Len()+len(p)) > l.max {
		l.exceeded = true
		l.full()
		return 0, errTooLarge
	}
	return l.buf.Write(p)
}

func (l *limitedBuffer) result() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String(), l.exceeded
}

// drainLimit is how much a remote tar may write after its end-of-archive
// marker (tar pads its output to a 10 KiB record) before CopyFile stops it.
const drainLimit = 1 << 20

// CopyFile copies srcPath (a file or a directory) out of container into
// destPath, a local gzip-compressed tar at compressionLevel, with entries
// rooted at the base name of srcPath. It runs `tar -C dir -cf - base` in the
// container and streams its output through an io.Pipe into archive.Repack,
// which checks every entry (names, link targets) and compresses it: memory use
// does not depend on the size of the copy. On any error destPath is removed.
//
// Errors name the pod, container and path and carry the tail of the remote
// tar's stderr (a missing path, a path that is not readable); an exec that
// cannot start tar says the container needs one.
func (c *Client) CopyFile(ctx context.Context, container, srcPath, destPath string, compressionLevel int) error {
	if err := c.copyFile(ctx, container, srcPath, destPath, compressionLevel); err != nil {
		_ = os.Remove(destPath)
		return fmt.Errorf("%s: copy %s from container %q of pod %s to %s: %w", c.Backend, srcPath, container, c.Pod, destPath, err)
	}
	return nil
}

func (c *Client) copyFile(ctx context.Context, container, srcPath, destPath string, level int) error {
	dir, base := splitPath(srcPath)
	f, err := os.Create(destPath)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 256*1024)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	stderr := newTail()
	execDone := make(chan error, 1)
	go func() {
		err := c.Exec.Exec(ctx, container, []string{"tar", "-C", dir, "-cf", "-", base}, nil, pw, stderr)
		pw.CloseWithError(err) // nil: readers see io.EOF
		execDone <- err
	}()

	repackErr := archive.Repack(ctx, pr, bw, level)
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
		return fmt.Errorf("%w%s", withStderr(execErr, stderr), binaryHint(execErr, "tar"))
	case repackErr != nil:
		return repackErr
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
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
