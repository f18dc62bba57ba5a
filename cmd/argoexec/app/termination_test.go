package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteTerminationMessage(t *testing.T) {
	long := strings.Repeat("x", 10000)
	tests := []struct {
		name    string
		create  bool
		err     error
		want    string // exact; "" with create means the file stays empty
		wantCut bool
	}{
		{name: "short error written whole", create: true, err: errors.New("collect output parameters: output parameter \"p\": /tmp/p does not exist"), want: "collect output parameters: output parameter \"p\": /tmp/p does not exist"},
		{name: "long error cut under the kubelet's limit, saying so", create: true, err: errors.New(long), wantCut: true},
		{name: "outside a pod the file is absent: nothing written", create: false, err: errors.New("boom")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "termination-log")
			if tt.create {
				if err := os.WriteFile(p, []byte("stale"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeTerminationMessage(p, tt.err); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if !tt.create {
				if err == nil {
					t.Errorf("created %s outside a pod", p)
				}
				return
			}
			got := string(b)
			switch {
			case tt.wantCut:
				if len(got) > maxTerminationMessage || !strings.Contains(got, "bytes cut; the whole error is in the container's log") || !strings.HasPrefix(got, "xxxx") {
					t.Errorf("cut message is %d bytes: %q...", len(got), got[len(got)-80:])
				}
			case got != tt.want:
				t.Errorf("message = %q, want %q", got, tt.want)
			}
		})
	}
}
