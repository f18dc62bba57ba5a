// Package executor holds the ContainerRuntimeExecutor interface that every
// backend implements and the errors they share: the backend contract.
//
// Backends live in executor/{k8sapi,kubelet,docker}; only cmd/ imports them.
// The init and wait flows over this interface are executor/flow; the
// controller protocols they serve, executor/protocol/{native,argo}.
package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// ContainerRuntimeExecutor is how wait reaches into the other containers of its
// own pod. Containers are named as in the pod spec; each backend resolves a
// name to whatever it needs (an exec target, a Docker container ID).
//
// A backend that truly cannot do a thing returns an error wrapping
// ErrNotSupported that says what to use instead.
type ContainerRuntimeExecutor interface {
	// GetFileContents returns the contents of the regular file at path in the
	// named container. For this method and CopyFile, a path that does not
	// exist gives an error that wraps fs.ErrNotExist and names container and
	// path. It is for small files (output parameters): backends may
	// refuse files larger than a limit they document, with an error that says so.
	GetFileContents(ctx context.Context, containerName, path string) (string, error)

	// CopyFile copies srcPath (a file or a directory) from the named container
	// into destPath, a local gzip-compressed tar archive, compressed at
	// compressionLevel (gzip.NoCompression .. gzip.BestCompression, or
	// gzip.DefaultCompression). The archive's entries are rooted at the base
	// name of srcPath, as `tar -C dir(src) -c base(src)` would write them.
	CopyFile(ctx context.Context, containerName, srcPath, destPath string, compressionLevel int) error

	// GetOutputStream streams the named container's log. With combined, the
	// stream holds stdout and stderr; without, stdout alone where the backend
	// can separate them (backends document what they do).
	GetOutputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error)

	// GetExitCode returns the exit code of a terminated container. A container
	// still running is an error that says so.
	GetExitCode(ctx context.Context, containerName string) (int, error)

	// Wait blocks until every named container has terminated, or ctx ends.
	Wait(ctx context.Context, containerNames []string) error

	// Kill asks each named running container to stop (SIGTERM) and, after
	// grace, forces what it can. Containers already terminated are skipped. A
	// container that could not be stopped is an error naming it and why.
	Kill(ctx context.Context, containerNames []string, grace time.Duration) error

	// ListContainerNames lists the names of the pod's containers, init
	// containers (including native sidecars) first.
	ListContainerNames(ctx context.Context) ([]string, error)
}

// ErrNotSupported is wrapped by errors for operations a backend cannot do.
var ErrNotSupported = errors.New("not supported by this backend")

// ErrPID1Survived is wrapped by Kill errors when a container's PID 1 ignored
// SIGTERM and the backend, signalling from inside the container, cannot
// SIGKILL it: the kernel drops signals to a PID namespace's init that it has
// no handler for.
var ErrPID1Survived = errors.New("PID 1 ignored SIGTERM and cannot be SIGKILLed from inside its PID namespace")

// ExitCodeError is the error of a process that ran and exited non-zero, in a
// container or locally. Check it with errors.As.
type ExitCodeError struct {
	// Container is the container the process ran in; empty for local processes.
	Container string
	// Command is what ran, for the message.
	Command string
	// Code is the exit code.
	Code int
	// Stderr is the tail of the process's stderr, if captured.
	Stderr string
}

// Error implements error.
func (e *ExitCodeError) Error() string {
	msg := fmt.Sprintf("%q exited with code %d", e.Command, e.Code)
	if e.Container != "" {
		msg = fmt.Sprintf("container %q: %s", e.Container, msg)
	}
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// NotSupported returns an error wrapping ErrNotSupported that names the
// backend and operation and says what to do instead.
func NotSupported(backend, op, instead string) error {
	return fmt.Errorf("%s: %s: %w; %s", backend, op, ErrNotSupported, instead)
}
