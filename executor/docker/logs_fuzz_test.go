package docker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// frame is one frame of the engine's multiplexed log stream.
func frame(stream byte, payload string) []byte {
	hdr := make([]byte, 8, 8+len(payload))
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	return append(hdr, payload...)
}

// referenceDemux is the multiplexed log format read by its definition: an
// 8-byte header (stream: 0 stdin or 1 stdout, 2 stderr, 3 an error from the
// engine; 3 bytes ignored; a big-endian uint32 length), then that many
// bytes. It returns what the reader must yield (a frame cut short yields
// what it holds) and whether the stream must end in an error (a header or
// frame cut short, an unknown stream, an engine error).
func referenceDemux(body []byte, combined bool) (out []byte, wantErr bool) {
	for len(body) > 0 {
		if len(body) < 8 {
			return out, true
		}
		stream, size := body[0], int(binary.BigEndian.Uint32(body[4:8]))
		body = body[8:]
		if stream > 3 {
			return out, true
		}
		payload := body[:min(size, len(body))]
		body = body[len(payload):]
		if stream == 3 {
			return out, true
		}
		if stream != 2 || combined {
			out = append(out, payload...)
		}
		if len(payload) < size {
			return out, true
		}
	}
	return out, false
}

// FuzzDemultiplex feeds arbitrary bytes to demultiplex as the logs API's
// body. It must yield exactly what the format defines, end in an error
// naming the container when the stream is not well framed (never a silent
// truncation), and allocate in proportion to what it was sent, not to the
// frame lengths that headers declare.
func FuzzDemultiplex(f *testing.F) {
	f.Add(bytes.Join([][]byte{frame(1, "out 1\n"), frame(2, "err 1\n"), frame(1, "out 2\n")}, nil), false)
	f.Add(bytes.Join([][]byte{frame(1, "out 1\n"), frame(2, "err 1\n"), frame(1, "out 2\n")}, nil), true)
	f.Add(frame(1, strings.Repeat("y", 1000)+"\n"), true)
	f.Add(frame(0, "stdin frame\n"), false)
	f.Add(append(frame(1, "before\n"), frame(3, "engine failed")...), true)
	f.Add(frame(1, "cut short")[:12], false)
	f.Add(frame(1, "x")[:5], false)
	f.Add(frame(9, "unknown stream"), false)
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'x'}, false) // declares 4 GiB, sends 1 byte
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, body []byte, combined bool) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		rc := demultiplex(io.NopCloser(bytes.NewReader(body)), combined, "main")
		got, err := io.ReadAll(rc)
		rc.Close()
		runtime.ReadMemStats(&m1)
		want, wantErr := referenceDemux(body, combined)
		if !bytes.Equal(got, want) {
			t.Errorf("demultiplex yields %q, want %q", got, want)
		}
		switch {
		case wantErr && err == nil:
			t.Errorf("demultiplex of a stream that is not well framed ends without an error")
		case !wantErr && err != nil:
			t.Errorf("demultiplex of a well-framed stream: %v", err)
		case err != nil && !strings.Contains(err.Error(), "container main"):
			t.Errorf("error %q does not name the container", err)
		}
		if alloc, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(1<<20+4*len(body)); alloc > limit {
			t.Errorf("demultiplex of %d bytes allocated %s, over %s", len(body), size(alloc), size(limit))
		}
	})
}

func size(n uint64) string { return fmt.Sprintf("%d bytes", n) }
