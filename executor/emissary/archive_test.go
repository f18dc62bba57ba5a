package emissary_test

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
)

func executortestArchive(r io.Reader, name string, size int64) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("open as gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	if err != nil {
		return fmt.Errorf("first entry: %w", err)
	}
	if h.Name != name || h.Size != size {
		return fmt.Errorf("entry %q of %d bytes, want %q of %d", h.Name, h.Size, name, size)
	}
	n, err := io.Copy(io.Discard, tr)
	if err != nil || n != size {
		return fmt.Errorf("read %s: %d bytes, %v", name, n, err)
	}
	return nil
}
