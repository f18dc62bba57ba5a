// Package executortest holds test doubles and the conformance suite for
// executor.ContainerRuntimeExecutor backends.
package executortest

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/argoexec/argoexec/executor"
)

// Fake is a hand-written executor.ContainerRuntimeExecutor for unit tests of
// code that uses a backend. Each method calls the matching func field when it
// is set; an unset field returns a zero value and no error, except where noted.
// Every call is recorded in Calls so tests can assert what happened.
type Fake struct {
	// The func fields stand in for the methods of the same names.
	GetFileContentsFunc    func(ctx context.Context, containerName, path string) (string, error)
	CopyFileFunc           func(ctx context.Context, containerName, srcPath, destPath string, compressionLevel int) error
	GetOutputStreamFunc    func(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error)
	GetExitCodeFunc        func(ctx context.Context, containerName string) (int, error)
	WaitFunc               func(ctx context.Context, containerNames []string) error
	KillFunc               func(ctx context.Context, containerNames []string, grace time.Duration) error
	ListContainerNamesFunc func(ctx context.Context) ([]string, error)

	mu    sync.Mutex
	calls []string
}

var _ executor.ContainerRuntimeExecutor = (*Fake)(nil)

// Calls returns the methods called so far, each as "Method(args)".
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *Fake) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

// GetFileContents implements executor.ContainerRuntimeExecutor.
func (f *Fake) GetFileContents(ctx context.Context, containerName, path string) (string, error) {
	f.record("GetFileContents(" + containerName + "," + path + ")")
	if f.GetFileContentsFunc == nil {
		return "", nil
	}
	return f.GetFileContentsFunc(ctx, containerName, path)
}

// CopyFile implements executor.ContainerRuntimeExecutor.
func (f *Fake) CopyFile(ctx context.Context, containerName, srcPath, destPath string, compressionLevel int) error {
	f.record("CopyFile(" + containerName + "," + srcPath + ")")
	if f.CopyFileFunc == nil {
		return nil
	}
	return f.CopyFileFunc(ctx, containerName, srcPath, destPath, compressionLevel)
}

// GetOutputStream implements executor.ContainerRuntimeExecutor. Unset, it
// returns an empty stream.
func (f *Fake) GetOutputStream(ctx context.Context, containerName string, combined bool) (io.ReadCloser, error) {
	f.record("GetOutputStream(" + containerName + ")")
	if f.GetOutputStreamFunc == nil {
		return io.NopCloser(strings.NewReader("")), nil
	}
	return f.GetOutputStreamFunc(ctx, containerName, combined)
}

// GetExitCode implements executor.ContainerRuntimeExecutor.
func (f *Fake) GetExitCode(ctx context.Context, containerName string) (int, error) {
	f.record("GetExitCode(" + containerName + ")")
	if f.GetExitCodeFunc == nil {
		return 0, nil
	}
	return f.GetExitCodeFunc(ctx, containerName)
}

// Wait implements executor.ContainerRuntimeExecutor.
func (f *Fake) Wait(ctx context.Context, containerNames []string) error {
	f.record("Wait(" + strings.Join(containerNames, ",") + ")")
	if f.WaitFunc == nil {
		return nil
	}
	return f.WaitFunc(ctx, containerNames)
}

// Kill implements executor.ContainerRuntimeExecutor.
func (f *Fake) Kill(ctx context.Context, containerNames []string, grace time.Duration) error {
	f.record("Kill(" + strings.Join(containerNames, ",") + ")")
	if f.KillFunc == nil {
		return nil
	}
	return f.KillFunc(ctx, containerNames, grace)
}

// ListContainerNames implements executor.ContainerRuntimeExecutor.
func (f *Fake) ListContainerNames(ctx context.Context) ([]string, error) {
	f.record("ListContainerNames()")
	if f.ListContainerNamesFunc == nil {
		return nil, nil
	}
	return f.ListContainerNamesFunc(ctx)
}
