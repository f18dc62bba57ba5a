package archive

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestRepackFile checks that RepackFile writes exactly what Repack writes (through every
// write-behind buffer several times over), and that on a refused stream it leaves destPath as
// it was and no temporary file beside it.
func TestRepackFile(t *testing.T) {
	big := make([]byte, writeBehindChunk*writeBehindDepth*2+12345) // cycles every buffer
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	tests := []struct {
		name    string
		tar     []byte
		wantErr error // nil: destPath must hold Repack's output
	}{
		{"one small file", makeTar(t, reg("a.txt", "hello")), nil},
		{"a tree", goodTree(t), nil},
		{"larger than all buffers together", makeTar(t, reg("big.bin", string(big))), nil},
		{"an entry climbing out", makeTar(t, reg("../escape", "x")), ErrUnsafeEntry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dest := filepath.Join(dir, "out.tgz")
			if err := os.WriteFile(dest, []byte("earlier"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := RepackFile(context.Background(), bytes.NewReader(tc.tar), dest, gzip.NoCompression)
			got, rerr := os.ReadFile(dest)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("RepackFile = %v, want an error wrapping %v", err, tc.wantErr)
				}
				if string(got) != "earlier" {
					t.Errorf("destPath changed on a failed copy: %d bytes", len(got))
				}
			} else {
				if err != nil {
					t.Fatalf("RepackFile: %v", err)
				}
				var want bytes.Buffer
				if err := Repack(context.Background(), bytes.NewReader(tc.tar), &want, gzip.NoCompression); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want.Bytes()) {
					t.Errorf("RepackFile wrote %d bytes, Repack of the same stream %d (or the same length, different bytes)", len(got), want.Len())
				}
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("%s holds %v; want only out.tgz (no temporary file left)", dir, names)
			}
		})
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n < len(p) {
		return 0, f.err
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteBehindReportsTheFirstError checks that a failed write stops the writer: Write says
// so once it learns of it, and Close returns the failure itself (and returns at all: its
// goroutine is joined).
func TestWriteBehindReportsTheFirstError(t *testing.T) {
	diskFull := errors.New("no space left on device")
	tests := []struct {
		name    string
		accept  int // bytes the file takes before failing
		written int // bytes written to the write-behind
		wantErr error
	}{
		{"fits", 10 * writeBehindChunk, 3*writeBehindChunk + 5, nil},
		{"fails on the first buffer", 0, 5 * writeBehindChunk, diskFull},
		{"fails later", 2 * writeBehindChunk, 8 * writeBehindChunk, diskFull},
		{"fails on the flush at Close", writeBehindChunk, writeBehindChunk + 7, diskFull},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wb := newWriteBehind(&failAfter{n: tc.accept, err: diskFull})
			chunk := bytes.Repeat([]byte{'x'}, 64<<10+1)
			var writeErr error
			for left := tc.written; left > 0 && writeErr == nil; {
				k := min(left, len(chunk))
				_, writeErr = wb.Write(chunk[:k])
				left -= k
			}
			closeErr := wb.Close()
			if !errors.Is(closeErr, tc.wantErr) || (tc.wantErr == nil) != (closeErr == nil) {
				t.Fatalf("Close = %v, want %v", closeErr, tc.wantErr)
			}
			if writeErr != nil && !errors.Is(writeErr, errWriteBehind) {
				t.Errorf("Write = %v, want nil or errWriteBehind", writeErr)
			}
			if tc.wantErr == nil && writeErr != nil {
				t.Errorf("Write = %v on a file that takes everything", writeErr)
			}
		})
	}
}

// TestRepackFileNamesTheFailedWrite checks that a destination that cannot be created gives an
// error naming it.
func TestRepackFileNamesTheFailedWrite(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "missing-dir", "out.tgz")
	err := RepackFile(context.Background(), bytes.NewReader(makeTar(t, reg("a", "b"))), dest, gzip.NoCompression)
	if err == nil || !strings.Contains(err.Error(), dest) {
		t.Fatalf("RepackFile = %v, want an error naming %s", err, dest)
	}
}
