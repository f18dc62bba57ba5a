package artifacts

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/archive"
)

// CompressionLevel is the gzip level to archive the output artifact art at:
// its archive.tar.compressionLevel, none for `archive: none` (the tarball is
// unpacked again before upload), else gzip's default.
func CompressionLevel(art wf.Artifact) int {
	if art.Archive != nil && art.Archive.None != nil {
		return gzip.NoCompression
	}
	if art.Archive != nil && art.Archive.Tar != nil && art.Archive.Tar.CompressionLevel != nil {
		return int(*art.Archive.Tar.CompressionLevel)
	}
	return gzip.DefaultCompression
}

// Unarchived unpacks tgz, which must hold one path (a regular file or a
// directory, as wait archives an output), into a new directory under dir
// and returns that path: how an output with `archive: none` is stored as it
// is, a directory file by file (Argo v3.3.8's argoexec untars it the same
// way and hands the file or the directory to the driver).
func Unarchived(ctx context.Context, tgz, dir string) (string, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return "", fmt.Errorf("archive: none: %w", err)
	}
	defer f.Close()
	x, err := os.MkdirTemp(dir, "none-")
	if err != nil {
		return "", fmt.Errorf("archive: none: %w", err)
	}
	if err := archive.Extract(ctx, f, x); err != nil {
		return "", fmt.Errorf("archive: none: %w", err)
	}
	entries, err := os.ReadDir(x)
	if err != nil {
		return "", fmt.Errorf("archive: none: %w", err)
	}
	if len(entries) != 1 || !(entries[0].Type().IsRegular() || entries[0].IsDir()) {
		return "", errors.New("archive: none: the path is neither a regular file nor a directory; remove `archive: none` to store it as a tarball")
	}
	return filepath.Join(x, entries[0].Name()), nil
}

// isGzipFile reports whether the file starts with the gzip magic number.
func isGzipFile(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, fmt.Errorf("open the downloaded artifact: %w", err)
	}
	defer f.Close()
	head := make([]byte, 2)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read the downloaded artifact: %w", err)
	}
	return archive.IsGzip(head[:n]), nil
}

// unpack extracts the tarball file into a fresh directory under tmp and
// moves the result to dest: the single entry itself when the archive holds
// one (a file or a directory, as wait archived it), else the directory of
// entries.
func unpack(ctx context.Context, file, tmp, dest string) error {
	x := filepath.Join(tmp, "x")
	if err := os.Mkdir(x, 0o755); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	err = archive.Extract(ctx, f, x)
	f.Close()
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	entries, err := os.ReadDir(x)
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	if len(entries) == 1 {
		return rename(filepath.Join(x, entries[0].Name()), dest)
	}
	return rename(x, dest)
}
