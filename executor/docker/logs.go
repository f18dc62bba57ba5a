package docker

import (
	"context"
	"fmt"
	"io"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// GetOutputStream implements executor.ContainerRuntimeExecutor. It reads the
// logs API (what the container wrote so far; it does not follow). The engine
// multiplexes stdout and stderr into one stream with frame headers; this
// demultiplexes it: stdout alone, or stdout and stderr interleaved as written
// when combined. A container with a TTY has one stream only, returned as is.
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
	pr, pw := io.Pipe()
	go func() {
		stderr := io.Discard
		if combined {
			stderr = pw
		}
		_, err := stdcopy.StdCopy(pw, stderr, body)
		body.Close()
		if err != nil {
			err = fmt.Errorf("docker: demultiplex logs of container %s: %w", containerName, err)
		}
		pw.CloseWithError(err)
	}()
	return &demuxed{PipeReader: pr, body: body}, nil
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
