package archive

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
)

// writeBehindChunk is the size of each buffer the write-behind goroutine
// writes to disk; writeBehindDepth buffers exist, so a copy holds
// writeBehindChunk*writeBehindDepth bytes at most, whatever its size.
const (
	writeBehindChunk = 128 << 10
	writeBehindDepth = 3
)

// RepackFile is Repack into a file: the gzip-compressed tar goes to a
// temporary file beside destPath, which is renamed to destPath once it is
// complete and closed, so destPath never holds half an archive. On an error
// the temporary file is removed and destPath is left as it was.
//
// The file is written by a goroutine of its own (write-behind, through
// writeBehindDepth fixed buffers), so reading the stream (a socket, an exec
// session) can go on while the disk is written instead of waiting on it;
// memory stays flat in the size of the copy.
func RepackFile(ctx context.Context, r io.Reader, destPath string, level int) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(destPath), "."+filepath.Base(destPath)+".*")
	if err != nil {
		return fmt.Errorf("archive: repack into %s: %w", destPath, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	wb := newWriteBehind(tmp)
	repackErr := Repack(ctx, r, wb, level)
	if err := wb.Close(); err != nil { // joins the goroutine, on every path
		return fmt.Errorf("archive: repack into %s: write %s: %w", destPath, tmp.Name(), err)
	}
	if repackErr != nil {
		return repackErr
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("archive: repack into %s: close %s: %w", destPath, tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), destPath); err != nil {
		return fmt.Errorf("archive: repack into %s: %w", destPath, err)
	}
	return nil
}

// writeBehind is an io.WriteCloser that hands full buffers to a goroutine
// writing them to w, and takes an emptied one back: the caller blocks only
// when every buffer is queued. Once a write to w has failed, Write returns
// errWriteBehind and Close the failure itself; buffers queued after it are
// dropped (the copy has failed; the caller discards the file).
type writeBehind struct {
	buf    []byte      // being filled by Write
	full   chan []byte // to the goroutine, in order
	free   chan []byte // emptied buffers, back from it
	done   chan error  // the goroutine's first error, once full is closed and drained
	failed atomic.Bool // set by the goroutine on its first error
}

func newWriteBehind(w io.Writer) *writeBehind {
	wb := &writeBehind{
		buf:  make([]byte, 0, writeBehindChunk),
		full: make(chan []byte, writeBehindDepth-1),
		free: make(chan []byte, writeBehindDepth),
		done: make(chan error, 1),
	}
	for range writeBehindDepth - 1 {
		wb.free <- make([]byte, 0, writeBehindChunk)
	}
	go func() {
		var first error
		for b := range wb.full {
			if first == nil {
				if _, first = w.Write(b); first != nil {
					wb.failed.Store(true)
				}
			}
			wb.free <- b[:0]
		}
		wb.done <- first
	}()
	return wb
}

// Write copies p into the current buffer, handing each full one over.
func (wb *writeBehind) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if wb.failed.Load() {
			return n, errWriteBehind
		}
		k := copy(wb.buf[len(wb.buf):cap(wb.buf)], p)
		wb.buf = wb.buf[:len(wb.buf)+k]
		n, p = n+k, p[k:]
		if len(wb.buf) == cap(wb.buf) {
			wb.handOver()
		}
	}
	if wb.failed.Load() {
		return n, errWriteBehind
	}
	return n, nil
}

// handOver queues the current buffer and takes an empty one.
func (wb *writeBehind) handOver() {
	wb.full <- wb.buf
	wb.buf = <-wb.free
}

// errWriteBehind is what Write returns once the goroutine's write has
// failed; Close returns the failure itself.
var errWriteBehind = fmt.Errorf("write-behind: an earlier write failed")

// Close writes what is buffered, waits for the goroutine and returns its
// first error. It must be called exactly once, on every path.
func (wb *writeBehind) Close() error {
	if len(wb.buf) > 0 && !wb.failed.Load() {
		wb.full <- wb.buf
	}
	close(wb.full)
	return <-wb.done
}
