package benchreport

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestQuantile(t *testing.T) {
	ten := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	for _, tc := range []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		{"median of ten by nearest rank", ten, 0.5, 5},
		{"p90 of ten", ten, 0.9, 9},
		{"min", ten, 0, 1},
		{"max", ten, 1, 10},
		{"one sample", []float64{3}, 0.9, 3},
		{"median of three", []float64{3, 1, 2}, 0.5, 2},
		{"p90 of seven is the largest", []float64{1, 2, 3, 4, 5, 6, 7}, 0.9, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quantile(tc.xs, tc.q); got != tc.want {
				t.Errorf("Quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
			}
		})
	}
	if got := Quantile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("Quantile(nil) = %v, want NaN", got)
	}
	in := []float64{3, 1, 2}
	Quantile(in, 0.5)
	if in[0] != 3 {
		t.Errorf("Quantile sorted its argument in place: %v", in)
	}
}

func TestReplaceBlock(t *testing.T) {
	block := Begin + "\nnew\n" + End
	for _, tc := range []struct {
		name, doc, before, want string
		wantErr                 bool
	}{
		{name: "replaces between the markers, keeps the rest",
			doc:  "# B\n\nintro\n\n" + Begin + "\nold\nold too\n" + End + "\n\n## Hand\ntext\n",
			want: "# B\n\nintro\n\n" + block + "\n\n## Hand\ntext\n"},
		{name: "inserts before the first heading",
			doc: "# B\n\nintro\n\n## Hand\ntext\n", before: "## ",
			want: "# B\n\nintro\n\n" + block + "\n\n## Hand\ntext\n"},
		{name: "appends without such a heading",
			doc: "# B\n\nintro", before: "## ",
			want: "# B\n\nintro\n\n" + block + "\n\n"},
		{name: "a lone Begin is an error", doc: "x\n" + Begin + "\nold\n", wantErr: true},
		{name: "End before Begin is an error", doc: End + "\n" + Begin + "\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReplaceBlock(tc.doc, "new\n", tc.before)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error; got %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
			again, err := ReplaceBlock(got, "new\n", tc.before)
			if err != nil || again != got {
				t.Errorf("a second run changed the document: %q, %v", again, err)
			}
		})
	}
}

func TestTableMarkdown(t *testing.T) {
	tb := Table{Header: []string{"a", "b"}}
	tb.Add("1", "x|y")
	want := "| a | b |\n|---|---|\n| 1 | x\\|y |\n"
	if got := tb.Markdown(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("a row of the wrong width did not panic")
		}
	}()
	tb.Add("only one")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it after a reviewed change):\n%s", p, got)
	}
}

func TestDistChart(t *testing.T) {
	series := []Series{
		{Label: "ours k8sapi", Samples: []float64{0.02, 0.01, 0.03, 0.02}},
		{Label: "Argo's kubelet <5 s>", Samples: []float64{5.0, 5.2, 4.9}},
		{Label: "no samples"},
	}
	svg := DistChart("main exits -> outputs reported", "seconds", series, true)
	if !strings.Contains(svg, "Argo&#39;s kubelet &lt;5 s&gt;") {
		t.Error("the label is not escaped")
	}
	if n := strings.Count(svg, "<circle"); n != 7 {
		t.Errorf("%d dots, want one per sample (7)", n)
	}
	golden(t, "dist.svg", svg)
	golden(t, "dist-linear.svg", DistChart("peak RSS", "MiB", series[:2], false))
}

func TestLineChart(t *testing.T) {
	svg := LineChart("API-server CPU", "concurrent steps", "CPU seconds", []Line{
		{Label: "k8sapi", X: []float64{20, 50}, Y: []float64{4.1, 10.3}},
		{Label: "kubelet", X: []float64{20, 50}, Y: []float64{0.3, 0.7}},
	})
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
	golden(t, "lines.svg", svg)
}
