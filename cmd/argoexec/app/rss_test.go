package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestParseStatm(t *testing.T) {
	tests := []struct {
		name  string
		statm string
		want  memUsage
		ok    bool
	}{
		{"linux", "325000 5300 4200 1900 0 80000 0\n", memUsage{anon: 1100 * 4, file: 4200 * 4}, true},
		{"short", "325000 5300\n", memUsage{}, false},
		{"not a number", "325000 x 4200 1 0 1 0\n", memUsage{}, false},
		{"shared over resident", "1 10 20 1 0 1 0\n", memUsage{}, false},
		{"empty", "", memUsage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStatm([]byte(tt.statm), 4)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseStatm = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestPeakRSSKiB(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   int64
		ok     bool
	}{
		{"linux", "Name:\targoexec\nVmPeak:\t 1300000 kB\nVmHWM:\t   31532 kB\nVmRSS:\t   30000 kB\n", 31532, true},
		{"no VmHWM", "Name:\targoexec\nVmRSS:\t   30000 kB\n", 0, false},
		{"odd unit", "VmHWM:\t 31 MB\n", 0, false},
		{"not a number", "VmHWM:\t x kB\n", 0, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := peakRSSKiB([]byte(tt.status))
			if got != tt.want || ok != tt.ok {
				t.Errorf("peakRSSKiB = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestMemSamplerKeepsPeakBetweenReadings: the private peak is the largest
// reading on any tick, not the last one, and Stop joins the goroutine.
func TestMemSamplerKeepsPeakBetweenReadings(t *testing.T) {
	readings := []memUsage{
		{anon: 3000, file: 16000}, // Start
		{anon: 9000, file: 17000}, // tick 1: the peak
		{anon: 4000, file: 16500}, // tick 2
		{anon: 3500, file: 16500}, // Stop
	}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	read := make(chan int, len(readings))
	n := 0
	s := newMemSampler(clk, 10*time.Millisecond, func() (memUsage, bool) {
		if n >= len(readings) {
			t.Errorf("read %d times, want %d", n+1, len(readings))
			return memUsage{}, false
		}
		u := readings[n]
		n++
		read <- n
		return u, true
	})
	s.Start(context.Background())
	<-read
	for tick := 1; tick <= 2; tick++ {
		// Start created the ticker, so the step reaches it; the goroutine
		// has taken the previous tick before it read.
		clk.Step(10 * time.Millisecond)
		if got := <-read; got != tick+1 {
			t.Fatalf("tick %d: reading %d", tick, got)
		}
	}
	s.Stop()
	<-read
	got := s.peaks()
	want := memPeaks{anon: 9000, file: 17000, samples: 4}
	if got != want {
		t.Errorf("peaks = %+v, want %+v", got, want)
	}
}

func TestUsageFields(t *testing.T) {
	cpu := func() (time.Duration, time.Duration, error) {
		return 12 * time.Millisecond, 3500 * time.Microsecond, nil
	}
	noCPU := func() (time.Duration, time.Duration, error) { return 0, 0, errors.New("no getrusage") }
	tests := []struct {
		name  string
		peaks memPeaks
		cpu   func() (time.Duration, time.Duration, error)
		want  logrus.Fields
	}{
		{"all", memPeaks{hwm: 25600, anon: 5120, file: 16896, samples: 3}, cpu, logrus.Fields{
			"peakPrivate": "5.0MiB", "sharedFile": "16.5MiB", "peakRSS": "25.0MiB",
			"cpu": "15.5ms", "cpuUser": "12.0ms", "cpuSys": "3.5ms"}},
		{"no /proc", memPeaks{}, cpu, logrus.Fields{"cpu": "15.5ms", "cpuUser": "12.0ms", "cpuSys": "3.5ms"}},
		{"nothing", memPeaks{}, noCPU, logrus.Fields{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, usageFields(tt.peaks, tt.cpu)); diff != "" {
				t.Errorf("usageFields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatmReaderAgreesWithStatus: the sampled private memory is RssAnon
// (argoexec maps no shared memory) and the shared figure RssFile, within
// what the process touches between the two reads.
func TestStatmReaderAgreesWithStatus(t *testing.T) {
	r, err := openStatm()
	if err != nil {
		t.Skip(err)
	}
	defer r.f.Close()
	u, ok := r.read()
	status, err := os.ReadFile("/proc/self/status")
	if !ok || err != nil {
		t.Fatalf("read statm: %v; status: %v", ok, err)
	}
	field := func(name string) int64 {
		for _, line := range splitLines(status) {
			if v, found := cutKB(line, name); found {
				return v
			}
		}
		t.Fatalf("no %s in status", name)
		return 0
	}
	if anon := field("RssAnon:"); abs(u.anon-anon) > 1024 {
		t.Errorf("statm private %d KiB, status RssAnon %d KiB", u.anon, anon)
	}
	if file := field("RssFile:") + field("RssShmem:"); abs(u.file-file) > 1024 {
		t.Errorf("statm shared %d KiB, status RssFile+RssShmem %d KiB", u.file, file)
	}
}

// BenchmarkMemSample is what one sample costs (it sets memSampleInterval),
// beside the reads the sampler does not do.
func BenchmarkMemSample(b *testing.B) {
	b.Run("statm pread", func(b *testing.B) {
		r, err := openStatm()
		if err != nil {
			b.Skip(err)
		}
		defer r.f.Close()
		for b.Loop() {
			if _, ok := r.read(); !ok {
				b.Fatal("unreadable statm")
			}
		}
	})
	for _, file := range []string{"/proc/self/status", "/proc/self/smaps_rollup"} {
		b.Run(file, func(b *testing.B) {
			if _, err := os.ReadFile(file); err != nil {
				b.Skip(err)
			}
			for b.Loop() {
				if _, err := os.ReadFile(file); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func splitLines(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return out
}

func cutKB(line, name string) (int64, bool) {
	if len(line) < len(name) || line[:len(name)] != name {
		return 0, false
	}
	var v int64
	_, err := fmt.Sscanf(line[len(name):], "%d kB", &v)
	return v, err == nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestGCCycles: the metric the line reports exists and counts collections.
func TestGCCycles(t *testing.T) {
	before := gcCycles()
	runtime.GC()
	if after := gcCycles(); after <= before {
		t.Errorf("gcCycles %d after runtime.GC, %d before", after, before)
	}
}
