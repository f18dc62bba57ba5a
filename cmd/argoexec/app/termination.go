package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// maxTerminationMessage is the kubelet's limit on one container's
// termination message; it cuts longer ones silently.
const maxTerminationMessage = 4096

// writeTerminationMessage writes err to path (the container's
// terminationMessagePath), where the controller and `kubectl describe pod`
// show it. A message over the kubelet's limit is cut, saying so. Outside a
// pod the file does not exist and nothing is written.
func writeTerminationMessage(path string, err error) error {
	if path == "" || err == nil {
		return nil
	}
	msg := err.Error()
	if len(msg) > maxTerminationMessage {
		note := fmt.Sprintf(" ... [%d bytes cut; the whole error is in the container's log]", len(msg)-maxTerminationMessage)
		msg = msg[:maxTerminationMessage-len(note)-20] + note
	}
	return writeTermination(path, msg)
}

// clearTerminationMessage empties the file at path, which a message
// written earlier (errWaitUnfinished) is in; outside a pod nothing is done.
func clearTerminationMessage(path string) error {
	if path == "" {
		return nil
	}
	return writeTermination(path, "")
}

// writeTermination replaces what the existing file at path holds with msg.
func writeTermination(path, msg string) error {
	f, oerr := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if errors.Is(oerr, fs.ErrNotExist) {
		return nil
	}
	if oerr != nil {
		return fmt.Errorf("write the termination message to %s: %w", path, oerr)
	}
	_, werr := f.WriteString(msg)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write the termination message to %s: %w", path, werr)
	}
	return nil
}
