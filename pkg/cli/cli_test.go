package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestExecute(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		args      []string
		wantUsage bool
		wantErr   string
	}{
		{name: "ok", args: []string{"do"}},
		{name: "command's own error", args: []string{"fail"}, wantErr: "boom"},
		{name: "command's usage error", args: []string{"bad"}, wantUsage: true, wantErr: "X is not set"},
		{name: "unknown flag", args: []string{"do", "--nope"}, wantUsage: true, wantErr: "unknown flag: --nope"},
		{name: "unknown command", args: []string{"what"}, wantUsage: true, wantErr: `unknown command "what"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := &cobra.Command{Use: "tool"}
			root.AddCommand(
				&cobra.Command{Use: "do", RunE: func(*cobra.Command, []string) error { return RunE(nil) }},
				&cobra.Command{Use: "fail", RunE: func(*cobra.Command, []string) error { return RunE(boom) }},
				&cobra.Command{Use: "bad", RunE: func(*cobra.Command, []string) error { return RunE(Usagef("X is not set")) }},
			)
			var stderr bytes.Buffer
			err := Execute(root, tt.args, &bytes.Buffer{}, &stderr)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var usage *UsageError
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, &usage) != tt.wantUsage {
				t.Fatalf("err = %v (usage %v), want %q (usage %v)", err, errors.As(err, &usage), tt.wantErr, tt.wantUsage)
			}
			if tt.name == "command's own error" && !errors.Is(err, boom) {
				t.Errorf("the command's error is not returned as is: %v", err)
			}
			if !strings.HasPrefix(stderr.String(), "tool: ") {
				t.Errorf("stderr = %q", stderr.String())
			}
		})
	}
}

func TestLogger(t *testing.T) {
	for _, tt := range []struct {
		o       LogOptions
		wantErr string
	}{
		{o: LogOptions{"debug", "json"}},
		{o: LogOptions{"loud", "text"}, wantErr: "--loglevel"},
		{o: LogOptions{"info", "xml"}, wantErr: `--log-format: "xml" is not a format`},
	} {
		var buf bytes.Buffer
		l, err := tt.o.Logger(&buf)
		if tt.wantErr != "" {
			var usage *UsageError
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &usage) {
				t.Errorf("%+v: err = %v, want a usage error with %q", tt.o, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		l.Debug("hello")
		if !strings.Contains(buf.String(), `"msg":"hello"`) {
			t.Errorf("json debug log = %q", buf.String())
		}
	}
}
