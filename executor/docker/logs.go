package docker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/moby/moby/client"
)

// GetOutputStream implements executor.ContainerRuntimeExecutor. It reads the
// logs API (what the container wrote so far; it does not follow). The engine
// multiplexes stdout and stderr into one stream with frame headers; this
// demultiplexes it: stdout alone, or stdout and stderr interleaved as written
// when combined; a stream cut short inside a frame ends it with an error, so
// a dropped connection never passes for a shorter log. A container with a
// TTY has one stream only, returned as is.
// Closing the returned stream, or ending ctx, ends the request.
func (e *Executor) GetOutputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error) {
	rc, err := e.outputStream(ctx, containerName, combined)
	if err != nil {
		return nil, fmt.Errorf("docker: get output of container %s of pod %s: %w", containerName, e.pod(), err)
	}
	return rc, nil
}

func (e *Executor) outputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error) {
	c, err := e.lookup(ctx, containerName)
	if err != nil {
		return nil, err
	}
	ins, err := e.cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect container %s: %w", shortID(c.ID), err)
	}
	tty := ins.Container.Config != nil && ins.Container.Config.Tty
	body, err := e.cli.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: combined})
	if err != nil {
		return nil, fmt.Errorf("logs API on container %s: %w", shortID(c.ID), err)
	}
	if tty {
		return body, nil
	}
	return demultiplex(body, combined, containerName), nil
}

// demultiplex reads the engine's multiplexed log stream from body and
// returns stdout, or stdout and stderr interleaved as written when
// combined (see demuxCopy for the format). A stream that is not well
// framed ends the returned reader with an error naming the container.
// Closing the reader closes body.
func demultiplex(body io.ReadCloser, combined bool, containerName string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		stderr := io.Discard
		if combined {
			stderr = pw
		}
		err := demuxCopy(pw, stderr, body)
		body.Close()
		if err != nil {
			err = fmt.Errorf("docker: demultiplex logs of container %s: %w", containerName, err)
		}
		pw.CloseWithError(err)
	}()
	return &demuxed{PipeReader: pr, body: body}
}

// maxEngineErrorBytes bounds how much of an error frame (stream 3, the
// engine reporting a failure mid-stream) is read into the error.
const maxEngineErrorBytes = 4096

// demuxCopy copies the frames of a multiplexed log stream from r: each an
// 8-byte header (byte 0 the stream: 0 stdin and 1 stdout to stdout, 2
// stderr, 3 an error from the engine; bytes 4-7 the frame's length, big
// endian) and then the frame. Frames stream through one fixed buffer, so
// memory does not depend on the lengths that headers declare (moby's
// stdcopy.StdCopy allocates a buffer of the declared length, up to 4 GiB
// for one 8-byte header). A stream that ends inside a header or a frame is
// an error wrapping io.ErrUnexpectedEOF, never a silently shorter log (StdCopy
// returns nil there).
func demuxCopy(stdout, stderr io.Writer, r io.Reader) error {
	var hdr [8]byte
	buf := make([]byte, 32*1024)
	for {
		n, err := io.ReadFull(r, hdr[:])
		switch {
		case errors.Is(err, io.EOF):
			return nil // between frames: the end of the log
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("the stream ends inside a frame header (%d of 8 bytes): %w", n, err)
		case err != nil:
			return err
		}
		size := int64(binary.BigEndian.Uint32(hdr[4:]))
		var w io.Writer
		switch hdr[0] {
		case 0, 1:
			w = stdout
		case 2:
			w = stderr
		case 3:
			msg, err := io.ReadAll(io.LimitReader(r, min(size, maxEngineErrorBytes)))
			if err != nil {
				return fmt.Errorf("read the engine's error frame: %w", err)
			}
			return fmt.Errorf("the engine reports an error in the log stream: %s", msg)
		default:
			return fmt.Errorf("frame header of unknown stream %d: not a multiplexed log stream (a TTY container's log is not multiplexed)", hdr[0])
		}
		copied, err := io.CopyBuffer(w, io.LimitReader(r, size), buf)
		if err != nil {
			return err
		}
		if copied < size {
			return fmt.Errorf("the stream ends inside a frame (%d of its %d bytes): %w", copied, size, io.ErrUnexpectedEOF)
		}
	}
}

// demuxed is the reading end of the demultiplexer; closing it also closes
// the logs response, so the goroutine copying it ends.
type demuxed struct {
	*io.PipeReader
	body io.Closer
}

// Close implements io.Closer.
func (d *demuxed) Close() error {
	d.PipeReader.Close()
	return d.body.Close()
}
