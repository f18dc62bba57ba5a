package cli

import (
	"bytes"
	"encoding/json"
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

// TestExecuteErrorFormat: the final error follows --log-format: plain
// "NAME: error" for text, one JSON log line for json.
func TestExecuteErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		json bool
	}{
		{"text", []string{"fail"}, false},
		{"json", []string{"--log-format", "json", "fail"}, true},
		{"json, flag after the command", []string{"fail", "--log-format=json"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := &cobra.Command{Use: "tool"}
			o := &LogOptions{}
			o.AddFlags(root.PersistentFlags())
			root.AddCommand(&cobra.Command{Use: "fail", RunE: func(*cobra.Command, []string) error { return RunE(errors.New(`upload "out": refused`)) }})
			var stderr bytes.Buffer
			if err := Execute(root, tc.args, &bytes.Buffer{}, &stderr); err == nil {
				t.Fatal("no error")
			}
			if !tc.json {
				if got := stderr.String(); got != "tool: upload \"out\": refused\n" {
					t.Errorf("stderr = %q", got)
				}
				return
			}
			var line map[string]any
			if err := json.Unmarshal(stderr.Bytes(), &line); err != nil {
				t.Fatalf("stderr %q is not one JSON line: %v", stderr.String(), err)
			}
			if line["level"] != "error" || line["msg"] != `upload "out": refused` || line["cmd"] != "tool" {
				t.Errorf("JSON error line = %v", line)
			}
		})
	}
}
