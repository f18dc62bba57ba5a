package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

const benchSize = 64 << 20

// benchTar is a tar holding one file of n bytes of data.
func benchTar(b *testing.B, data []byte) []byte {
	b.Helper()
	var buf bytes.Buffer
	buf.Grow(len(data) + 4096)
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "out/data", Mode: 0o644, Size: int64(len(data))}); err != nil {
		b.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// randomData is incompressible.
func randomData(n int) []byte {
	r := rand.NewChaCha8([32]byte{1})
	p := make([]byte, n)
	_, _ = r.Read(p)
	return p
}

// compressibleData looks like a log: numbered lines of a few words, which
// gzip shrinks about tenfold.
func compressibleData(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"INFO", "WARN", "step", "pod", "main", "completed", "artifact", "uploaded", "bytes", "ok"}
	var buf bytes.Buffer
	buf.Grow(n + 128)
	for i := 0; buf.Len() < n; i++ {
		fmt.Fprintf(&buf, "%08d %s %s %s %d\n", i, words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(1000))
	}
	return buf.Bytes()[:n]
}

// BenchmarkRepack measures Repack of a 64 MiB file at three gzip levels;
// MB/s is of tar input consumed.
func BenchmarkRepack(b *testing.B) {
	for _, data := range []struct {
		name string
		make func(int) []byte
	}{{"random", randomData}, {"compressible", compressibleData}} {
		in := benchTar(b, data.make(benchSize))
		for _, level := range []struct {
			name  string
			level int
		}{{"NoCompression", gzip.NoCompression}, {"BestSpeed", gzip.BestSpeed}, {"Default", gzip.DefaultCompression}} {
			b.Run(data.name+"/"+level.name, func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				var out countingWriter
				for b.Loop() {
					out = 0
					if err := Repack(context.Background(), bytes.NewReader(in), &out, level.level); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out)/float64(len(in)), "out/in")
			})
		}
	}
}

// countingWriter discards what it is given and counts it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
