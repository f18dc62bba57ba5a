package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/protocol/argo"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

// TestWaitArchiveLogs: with archiveLogs, wait stores main's combined log at
// ARCHIVE-KEY/main.log and reports it after the template's artifacts
// exactly as Argo v3.3.8's argoexec does; without it, nothing of the kind.
func TestWaitArchiveLogs(t *testing.T) {
	const log = "out line\nerr line\nno newline at the end"
	loc := &wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}, Key: "wf/pod"}}
	tests := []struct {
		name       string
		archive    bool
		loc        *wf.ArtifactLocation
		putErr     error
		logErr     error
		wantReport string // the report's artifacts, as JSON
		wantStored map[string]string
		wantErr    string
	}{
		{name: "archived", archive: true, loc: loc,
			wantReport: `[{"name":"out","path":"/work/out.txt","s3":{"key":"wf/pod/out.tgz"}},{"name":"main-logs","s3":{"key":"wf/pod/main.log"}}]`,
			wantStored: map[string]string{"wf/pod/main.log": log}},
		{name: "not asked for", loc: loc, wantReport: `[{"name":"out","path":"/work/out.txt","s3":{"key":"wf/pod/out.tgz"}}]`},
		{name: "upload fails", archive: true, loc: loc, putErr: errors.New("s3: upload: credentials refused"),
			wantErr: `save main's log (archiveLogs): main-logs: s3: upload: credentials refused`},
		{name: "log unreadable", archive: true, loc: loc, logErr: errors.New("pods/log: 403"),
			wantErr: `save main's log (archiveLogs): read main's log: pods/log: 403`},
		{name: "no archive location", archive: true,
			wantErr: `main-logs: no artifact repository: the template has no archiveLocation`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := scriptTemplate()
			tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/work/out.txt"}}
			var asked []bool
			fake := &executortest.Fake{GetOutputStreamFunc: func(_ context.Context, c string, combined bool) (io.ReadCloser, error) {
				asked = append(asked, combined)
				if tt.logErr != nil {
					return nil, tt.logErr
				}
				return io.NopCloser(strings.NewReader(log)), nil
			}}
			store := &memStore{putErr: tt.putErr}
			rep := &recorder{}
			cfg := flow.WorkflowConfig{
				Protocol: flow.Protocol{Artifacts: argo.ArchiveLocationLocator{Location: tt.loc}, ArchiveLogs: tt.archive, IncludeScriptOutput: new(bool)},
				Template: tmpl, Step: flow.StepRef{Workflow: "wf", Pod: "pod"}, Paths: flow.Paths{TempDir: t.TempDir(), MainCtrFS: mainFS(t, map[string]string{"out.txt": "O"})},
			}
			err := flow.NewWorkflowExecutor(cfg, fake, storeOf(store), rep, testLog()).Wait(context.Background())
			if tt.putErr == nil && tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if got, _ := json.Marshal(rep.got.Artifacts); string(got) != tt.wantReport {
				t.Errorf("reported %s\nwant     %s", got, tt.wantReport)
			}
			for k, v := range tt.wantStored {
				if string(store.objects[k]) != v {
					t.Errorf("stored %s = %q, want main's combined log %q", k, store.objects[k], v)
				}
			}
			if tt.archive && (len(asked) != 1 || !asked[0]) {
				t.Errorf("log reads (combined?) %v, want one combined read", asked)
			}
			if !tt.archive && len(asked) != 0 {
				t.Errorf("main's log read %d times; nothing asked for it", len(asked))
			}
		})
	}
}

// TestWaitArchiveLogsRereadsGrownLog: a log whose end moved while it was
// read for archiveLogs is read again, and the second read is what is
// stored.
func TestWaitArchiveLogsRereadsGrownLog(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	logs := []string{"first half", "first half, then the end"}
	reads, settles := 0, 0
	fake := &executortest.Fake{GetOutputStreamFunc: func(context.Context, string, bool) (io.ReadCloser, error) {
		reads++
		return io.NopCloser(strings.NewReader(logs[min(reads, len(logs))-1])), nil
	}}
	settle := func(time.Time) (time.Time, bool, error) {
		settles++
		if settles == 1 {
			return t0, true, nil
		}
		return t0.Add(time.Second), true, nil
	}
	loc := &wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}, Key: "wf/pod"}}
	store := &memStore{}
	cfg := flow.WorkflowConfig{
		Protocol: flow.Protocol{Artifacts: argo.ArchiveLocationLocator{Location: loc}, ArchiveLogs: true, IncludeScriptOutput: new(bool)},
		Template: scriptTemplate(), Step: flow.StepRef{Workflow: "wf", Pod: "pod"}, Paths: flow.Paths{TempDir: t.TempDir(), MainCtrFS: mainFS(t, nil)},
	}
	if err := flow.NewWorkflowExecutor(cfg, logChecking{Fake: fake, settle: settle}, storeOf(store), &recorder{}, testLog()).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reads != 2 {
		t.Errorf("main's log read %d times, want 2 (its end moved during the first read)", reads)
	}
	if got := string(store.objects["wf/pod/main.log"]); got != logs[1] {
		t.Errorf("stored main.log = %q, want the second read %q", got, logs[1])
	}
}
