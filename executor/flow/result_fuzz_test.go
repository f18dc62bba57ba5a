package flow_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/flow"
)

// chunkReader returns at most n bytes per Read, as a log stream arrives
// in pieces of any size.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// FuzzResult reads arbitrary bytes, in pieces of arbitrary size, as main's
// stdout into a script's result with a limit of max bytes. The result must
// be the tail of the output (less one trailing newline), at most max bytes,
// flagged as truncated exactly when bytes were dropped, and valid UTF-8
// whenever the output is: a cut inside a character would reach the
// controller as U+FFFD, a silent change. (The limit is maxBytes+1.)
func FuzzResult(f *testing.F) {
	f.Add([]byte("a\n42\n\n"), uint16(99), uint8(1))
	f.Add([]byte(strings.Repeat("x", 300)+"answer\n"), uint16(99), uint8(7))
	f.Add([]byte(strings.Repeat("0123456789", 50)), uint16(24), uint8(1))
	f.Add([]byte(strings.Repeat("é", 60)), uint16(24), uint8(3))
	f.Add([]byte("\xff\xfe"), uint16(0), uint8(2))
	f.Fuzz(func(t *testing.T, log []byte, maxBytes uint16, chunk uint8) {
		limit := int(maxBytes)%4096 + 1
		fake := &executortest.Fake{GetOutputStreamFunc: func(context.Context, string, bool) (io.ReadCloser, error) {
			return io.NopCloser(chunkReader{r: iotest.DataErrReader(bytes.NewReader(log)), n: int(chunk)%512 + 1}), nil
		}}
		rep := &recorder{}
		we := flow.NewWorkflowExecutor(flow.WorkflowConfig{Template: scriptTemplate(), MaxResultBytes: limit}, fake, nil, rep, testLog())
		if err := we.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rep.got == nil || rep.got.Result == nil {
			t.Fatalf("no result reported: %+v", rep.got)
		}
		got := *rep.got.Result
		stripped := bytes.TrimSuffix(log, []byte("\n")) // stripped first, then cut, as Argo does
		kept := stripped[len(stripped)-min(limit, len(stripped)):]
		switch {
		case len(got) > limit:
			t.Errorf("result is %d bytes, over the limit of %d", len(got), limit)
		case !bytes.HasSuffix(kept, []byte(got)) || len(kept)-len(got) >= utf8.UTFMax:
			t.Errorf("result = %q, want the tail %q (less at most a cut character)", got, kept)
		case utf8.Valid(log) && !utf8.ValidString(got):
			t.Errorf("result %q of a UTF-8 output is not UTF-8", got)
		case rep.got.ResultTruncated != (len(got) < len(stripped)):
			t.Errorf("resultTruncated = %v for a result of %d bytes from %d", rep.got.ResultTruncated, len(got), len(log))
		case int64(len(stripped)-len(got)) != rep.got.ResultDroppedBytes:
			t.Errorf("resultDroppedBytes = %d, want %d", rep.got.ResultDroppedBytes, len(stripped)-len(got))
		}
		var bad int64
		for i := 0; i < len(got); {
			r, size := utf8.DecodeRuneInString(got[i:])
			if r == utf8.RuneError && size == 1 {
				bad++
			}
			i += size
		}
		if r := rep.got.ResultReplaced; (r == nil) != (bad == 0) || r != nil && r.Bytes != bad {
			t.Errorf("resultReplaced = %+v for a result with %d bytes that are not UTF-8", r, bad)
		}
	})
}
