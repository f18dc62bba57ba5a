package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/moby/moby/client"

	"github.com/argoexec/argoexec/pkg/archive"
)

// maxSymlinkHops bounds how many symbolic links GetFileContents follows.
const maxSymlinkHops = 8

// GetFileContents implements executor.ContainerRuntimeExecutor. It reads
// through the archive API, so it works on stopped containers and on files
// that only the image's layers hold. A symbolic link is followed (as the
// engine resolves it, inside the container). Files larger than
// MaxFileContentsBytes are refused.
func (e *Executor) GetFileContents(ctx context.Context, containerName, filePath string) (string, error) {
	s, err := e.readFile(ctx, containerName, filePath)
	if err != nil {
		return "", fmt.Errorf("docker: read %s from container %s of pod %s: %w", filePath, containerName, e.pod(), err)
	}
	return s, nil
}

func (e *Executor) readFile(ctx context.Context, containerName, filePath string) (string, error) {
	c, err := e.lookup(ctx, containerName)
	if err != nil {
		return "", err
	}
	p := filePath
	for range maxSymlinkHops {
		res, err := e.cli.CopyFromContainer(ctx, c.ID, client.CopyFromContainerOptions{SourcePath: p})
		if err != nil {
			return "", archiveError(c.ID, p, err)
		}
		st := res.Stat
		switch {
		case st.Mode&os.ModeSymlink != 0:
			res.Content.Close()
			target := st.LinkTarget
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(p), target)
			}
			p = target
			continue
		case !st.Mode.IsRegular():
			res.Content.Close()
			return "", fmt.Errorf("%s is not a regular file (mode %s)", p, st.Mode)
		case st.Size > MaxFileContentsBytes:
			res.Content.Close()
			return "", fmt.Errorf("file is %d bytes, more than the %d this backend returns as a parameter; use an artifact for large outputs", st.Size, MaxFileContentsBytes)
		}
		s, err := firstRegular(res.Content)
		res.Content.Close()
		return s, err
	}
	return "", fmt.Errorf("more than %d symbolic links", maxSymlinkHops)
}

// firstRegular reads the tar stream the archive API sends for a single file
// and returns that file's content.
func firstRegular(r io.Reader) (string, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil {
		return "", fmt.Errorf("read archive API tar stream: %w", err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return "", fmt.Errorf("archive entry %q is not a regular file", hdr.Name)
	}
	if hdr.Size > MaxFileContentsBytes {
		return "", fmt.Errorf("file is %d bytes, more than the %d this backend returns as a parameter; use an artifact for large outputs", hdr.Size, MaxFileContentsBytes)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		return "", fmt.Errorf("read %q from archive API tar stream: %w", hdr.Name, err)
	}
	return string(b), nil
}

// CopyFile implements executor.ContainerRuntimeExecutor. The archive API
// sends srcPath as a tar rooted at its base name; it is streamed through
// archive.RepackFile (which refuses entries escaping the root) into destPath,
// written under a temporary name and renamed once complete. It works on
// stopped containers and on paths the image's layers hold.
func (e *Executor) CopyFile(ctx context.Context, containerName, srcPath, destPath string, compressionLevel int) error {
	if err := e.copyFile(ctx, containerName, srcPath, destPath, compressionLevel); err != nil {
		return fmt.Errorf("docker: copy %s from container %s of pod %s to %s: %w", srcPath, containerName, e.pod(), destPath, err)
	}
	return nil
}

func (e *Executor) copyFile(ctx context.Context, containerName, srcPath, destPath string, level int) error {
	c, err := e.lookup(ctx, containerName)
	if err != nil {
		return err
	}
	res, err := e.cli.CopyFromContainer(ctx, c.ID, client.CopyFromContainerOptions{SourcePath: srcPath})
	if err != nil {
		return archiveError(c.ID, srcPath, err)
	}
	defer res.Content.Close()

	return archive.RepackFile(ctx, res.Content, destPath, level)
}

// archiveError describes a failed archive API call. The container was just
// found, so a 404 is the path: that error wraps fs.ErrNotExist, as the
// interface promises for a missing path.
func archiveError(id, p string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("archive API on container %s: %s: %w (%v)", shortID(id), p, fs.ErrNotExist, err)
	}
	return fmt.Errorf("archive API on container %s: %w", shortID(id), err)
}
