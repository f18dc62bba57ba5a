package app

import (
	"context"
	"errors"
)

// runWait is what `argoexec wait` does once its options are valid.
func runWait(ctx context.Context, o *WaitOptions) error {
	return errors.New("argoexec wait: not implemented yet")
}

// runInit is what `argoexec init` does once its options are valid.
func runInit(ctx context.Context, o *InitOptions) error {
	return errors.New("argoexec init: not implemented yet")
}
