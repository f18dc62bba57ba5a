package flow_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/argoexec/argoexec/executor/executortest"
	"github.com/argoexec/argoexec/executor/flow"
	"github.com/argoexec/argoexec/executor/protocol/argo"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
	"github.com/argoexec/argoexec/pkg/artifacts"
)

// TestInitInputsOnVolumes: under a protocol with InputsOnVolumes, an input
// whose path is on one of main's volumes is written through the volume's
// mirror; any other input, and every input without it, goes to
// InputArtifacts/NAME.
func TestInitInputsOnVolumes(t *testing.T) {
	tests := []struct {
		name     string
		onVolume bool
		want     map[string]string // artifact name -> where, relative to the test's root
	}{
		{name: "our protocol", want: map[string]string{"vol": "inputs/vol", "tmp": "inputs/tmp"}},
		{name: "inputs on volumes", onVolume: true, want: map[string]string{"vol": "mainctrfs/work/in/vol.txt", "tmp": "inputs/tmp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tmpl := scriptTemplate() // main mounts /work
			tmpl.Inputs.Artifacts = []wf.Artifact{
				{Name: "vol", Path: "/work/in/vol.txt", Raw: &wf.RawArtifact{Data: "vol"}},
				{Name: "tmp", Path: "/tmp/tmp.txt", Raw: &wf.RawArtifact{Data: "tmp"}},
			}
			we := flow.NewWorkflowExecutor(flow.WorkflowConfig{
				Template: tmpl, Protocol: flow.Protocol{InputsOnVolumes: tt.onVolume}, Paths: flow.Paths{MainCtrFS: filepath.Join(root, "mainctrfs"), InputArtifacts: filepath.Join(root, "inputs"), VarRunArgo: t.TempDir()},
			}, nil, nil, nil, testLog())
			if err := we.Init(context.Background()); err != nil {
				t.Fatal(err)
			}
			for name, rel := range tt.want {
				if b, err := os.ReadFile(filepath.Join(root, rel)); err != nil || string(b) != name {
					t.Errorf("%s at %s: %q, %v", name, rel, b, err)
				}
			}
		})
	}
}

// driverStore is an ArtifactDriver that records what it was handed: whole
// artifacts, locations filled in.
type driverStore struct {
	mu    sync.Mutex
	saved []wf.Artifact
}

func (d *driverStore) Load(_ context.Context, art wf.Artifact, dest string) error {
	return os.WriteFile(dest, []byte("loaded "+art.Name), 0o644)
}

func (d *driverStore) Save(_ context.Context, _ string, art wf.Artifact) (artifacts.Object, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.saved = append(d.saved, art)
	return artifacts.Object{Key: art.S3.Key}, nil
}

func TestArtifactsThroughDriver(t *testing.T) {
	tmpl := scriptTemplate()
	tmpl.Inputs.Artifacts = []wf.Artifact{{Name: "in", Path: "/in", HTTP: &wf.HTTPArtifact{URL: "http://unused"}}}
	tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "out", Path: "/work/out.txt"}}
	d := &driverStore{}
	inputs := t.TempDir()
	cfg := flow.WorkflowConfig{
		Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Step: flow.StepRef{Workflow: "wf", Pod: "pod"}, Paths: flow.Paths{InputArtifacts: inputs, VarRunArgo: t.TempDir(), MainCtrFS: mainFS(t, map[string]string{"out.txt": "O"})},
	}
	if err := flow.NewWorkflowExecutor(cfg, nil, d, nil, testLog()).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(inputs, "in")); string(b) != "loaded in" {
		t.Errorf("input = %q; want the driver's", b)
	}
	rep := &recorder{}
	if err := flow.NewWorkflowExecutor(cfg, &executortest.Fake{}, d, rep, testLog()).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(d.saved) != 1 || d.saved[0].S3 == nil || d.saved[0].S3.Endpoint != "s3:7070" || d.saved[0].S3.Bucket != "b" || d.saved[0].S3.Key != "wf/pod/out.tgz" {
		t.Fatalf("saved %+v; want out at s3://b/wf/pod/out.tgz on s3:7070", d.saved)
	}
	if len(rep.got.Artifacts) != 1 || *rep.got.Artifacts[0].S3 != *d.saved[0].S3 {
		t.Errorf("reported %+v; want the saved location", rep.got.Artifacts)
	}
}

// TestInitWithoutStore: with no store, an s3 input is refused before
// anything loads (main must not run on half its inputs), saying what to
// configure.
func TestInitWithoutStore(t *testing.T) {
	tmpl := scriptTemplate()
	tmpl.Inputs.Artifacts = []wf.Artifact{
		{Name: "raw", Path: "/in/raw", Raw: &wf.RawArtifact{Data: "r"}},
		{Name: "s3", Path: "/in/s3", S3: &wf.S3Artifact{Key: "k"}},
	}
	inputs := t.TempDir()
	err := flow.NewWorkflowExecutor(flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: repo()}, Template: tmpl, Paths: flow.Paths{InputArtifacts: inputs, VarRunArgo: t.TempDir()}}, nil, nil, nil, testLog()).Init(context.Background())
	if err == nil || !strings.Contains(err.Error(), `input artifact "s3": no S3 repository is configured`) {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(inputs, "raw")); !os.IsNotExist(err) {
		t.Errorf("raw was loaded (%v): init must refuse before it loads anything", err)
	}
}

// TestArchiveNoneDirectory: a directory output with `archive: none`, on one
// of main's volumes or in main's image, is stored file by file under
// KEY/BASENAME as Argo v3.3.8's argoexec stores it and reported by that key;
// a downstream step's input of that key loads the directory.
func TestArchiveNoneDirectory(t *testing.T) {
	none := &wf.ArchiveStrategy{None: &wf.NoneStrategy{}}
	tmpl := scriptTemplate() // main mounts /work
	tmpl.Outputs.Artifacts = []wf.Artifact{
		{Name: "vol", Path: "/work/outdir", Archive: none},
		{Name: "image", Path: "/tmp/imgdir", Archive: none},
	}
	fake := &executortest.Fake{CopyFileFunc: func(_ context.Context, _, src, dest string, _ int) error {
		if src != "/tmp/imgdir" {
			return fmt.Errorf("copy %s: unexpected", src)
		}
		return os.WriteFile(dest, tgzOf(t, map[string]string{"imgdir/x": "X", "imgdir/y/z": "Z"}), 0o644)
	}}
	loc := &wf.ArtifactLocation{S3: &wf.S3Artifact{S3Bucket: wf.S3Bucket{Endpoint: "s3:7070", Bucket: "b"}, Key: "wf/pod"}}
	store := &memStore{}
	rep := &recorder{}
	cfg := flow.WorkflowConfig{
		Protocol: flow.Protocol{Artifacts: argo.ArchiveLocationLocator{Location: loc}}, Template: tmpl, Step: flow.StepRef{Workflow: "wf", Pod: "pod"}, Paths: flow.Paths{MainCtrFS: mainFS(t, map[string]string{"outdir/a.txt": "A", "outdir/sub/b.txt": "B"}), TempDir: t.TempDir()},
	}
	if err := flow.NewWorkflowExecutor(cfg, fake, storeOf(store), rep, testLog()).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range store.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "wf/pod/imgdir/x,wf/pod/imgdir/y/z,wf/pod/outdir/a.txt,wf/pod/outdir/sub/b.txt" {
		t.Fatalf("stored %s", got)
	}
	if a := rep.got.Artifacts; len(a) != 2 || a[0].S3.Key != "wf/pod/outdir" || a[1].S3.Key != "wf/pod/imgdir" || a[0].S3.Bucket != "" {
		t.Errorf("reported %+v; want the keys alone, as Argo's", a)
	}

	down := scriptTemplate()
	down.Inputs.Artifacts = []wf.Artifact{{Name: "in", Path: "/in", S3: &wf.S3Artifact{Key: "wf/pod/outdir"}}}
	inputs := t.TempDir()
	dcfg := flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: argo.ArchiveLocationLocator{Location: loc}}, Template: down, Paths: flow.Paths{InputArtifacts: inputs, VarRunArgo: t.TempDir()}}
	if err := flow.NewWorkflowExecutor(dcfg, nil, storeOf(store), nil, testLog()).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	for rel, body := range map[string]string{"a.txt": "A", "sub/b.txt": "B"} {
		if b, err := os.ReadFile(filepath.Join(inputs, "in", rel)); err != nil || string(b) != body {
			t.Errorf("downstream in/%s = %q, %v; want %q", rel, b, err, body)
		}
	}
}

// TestInitRefusesHDFS: an hdfs artifact, or an output bound for an hdfs
// archive location, fails init before main runs, naming the artifact and
// what to use instead; nothing is loaded.
func TestInitRefusesHDFS(t *testing.T) {
	hdfsLoc := &wf.ArtifactLocation{HDFS: &wf.HDFSArtifact{Path: "/wf/pod"}}
	tests := []struct {
		name    string
		edit    func(tmpl *wf.Template)
		loc     *wf.ArtifactLocation
		wantErr []string
	}{
		{name: "hdfs input", edit: func(tmpl *wf.Template) {
			tmpl.Inputs.Artifacts = append(tmpl.Inputs.Artifacts, wf.Artifact{Name: "h", Path: "/in/h", HDFS: &wf.HDFSArtifact{Path: "/data/h"}})
		}, wantErr: []string{`input artifact "h": not supported: argoexec has no hdfs store`, "store the artifact in an S3-compatible bucket instead"}},
		{name: "hdfs output", edit: func(tmpl *wf.Template) {
			tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "o", Path: "/work/o", HDFS: &wf.HDFSArtifact{Path: "/data/o"}}}
		}, wantErr: []string{`output artifact "o": not supported: argoexec has no hdfs store`, "Argo's own argoexec image"}},
		{name: "output to an hdfs archive location", loc: hdfsLoc, edit: func(tmpl *wf.Template) {
			tmpl.Outputs.Artifacts = []wf.Artifact{{Name: "o", Path: "/work/o"}}
		}, wantErr: []string{`output artifact "o": not supported: argoexec has no hdfs store`, "(the controller's repository for it is hdfs)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := scriptTemplate()
			tmpl.Inputs.Artifacts = []wf.Artifact{{Name: "raw", Path: "/in/raw", Raw: &wf.RawArtifact{Data: "r"}}}
			tt.edit(tmpl)
			inputs := t.TempDir()
			cfg := flow.WorkflowConfig{Protocol: flow.Protocol{Artifacts: argo.ArchiveLocationLocator{Location: tt.loc}}, Template: tmpl, Paths: flow.Paths{InputArtifacts: inputs, VarRunArgo: t.TempDir()}}
			err := flow.NewWorkflowExecutor(cfg, nil, storeOf(&memStore{}), nil, testLog()).Init(context.Background())
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want %q", err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(inputs, "raw")); !os.IsNotExist(err) {
				t.Errorf("raw was loaded (%v): init must refuse before it loads anything", err)
			}
		})
	}
}
