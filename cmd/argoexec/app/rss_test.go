package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	clocktesting "k8s.io/utils/clock/testing"
)

func status(hwm, anon, file int64) string {
	return fmt.Sprintf("Name:\targoexec\nVmPeak:\t 1300000 kB\nVmHWM:\t %d kB\nVmRSS:\t 30000 kB\nRssAnon:\t %d kB\nRssFile:\t %d kB\nRssShmem:\t 0 kB\n", hwm, anon, file)
}

func TestReadMemUsage(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   memUsage
		ok     bool
	}{
		{"linux", status(31532, 4100, 16900), memUsage{hwm: 31532, anon: 4100, file: 16900}, true},
		{"no RssAnon", "VmHWM:\t 31532 kB\nRssFile:\t 1 kB\n", memUsage{}, false},
		{"odd unit", "VmHWM:\t 31 MB\nRssAnon:\t 1 kB\nRssFile:\t 1 kB\n", memUsage{}, false},
		{"not a number", "VmHWM:\t x kB\nRssAnon:\t 1 kB\nRssFile:\t 1 kB\n", memUsage{}, false},
		{"empty", "", memUsage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := readMemUsage([]byte(tt.status))
			if got != tt.want || ok != tt.ok {
				t.Errorf("readMemUsage = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestMemSamplerKeepsPeakBetweenReadings: the private peak is the largest
// RssAnon seen on any tick, not the last one; VmHWM is the last reading.
func TestMemSamplerKeepsPeakBetweenReadings(t *testing.T) {
	readings := []string{
		status(20000, 3000, 16000), // Start
		status(26000, 9000, 17000), // tick 1: the peak
		status(26000, 4000, 16500), // tick 2
		status(26000, 3500, 16500), // Stop
	}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	read := make(chan int, len(readings))
	n := 0
	s := newMemSampler(clk, 10*time.Millisecond, func() ([]byte, error) {
		if n >= len(readings) {
			t.Errorf("read %d times, want %d", n+1, len(readings))
			return nil, errors.New("no more readings")
		}
		b := []byte(readings[n])
		n++
		read <- n
		return b, nil
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
	want := memPeaks{hwm: 26000, anon: 9000, file: 17000, samples: 4}
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

// BenchmarkReadProcStatus is what one sample costs (it sets
// memSampleInterval), beside smaps_rollup, which the sampler does not read.
func BenchmarkReadProcStatus(b *testing.B) {
	for _, file := range []string{"/proc/self/status", "/proc/self/smaps_rollup"} {
		b.Run(file, func(b *testing.B) {
			if _, err := os.ReadFile(file); err != nil {
				b.Skip(err)
			}
			for b.Loop() {
				st, err := os.ReadFile(file)
				if err != nil {
					b.Fatal(err)
				}
				if file == "/proc/self/status" {
					if _, ok := readMemUsage(st); !ok {
						b.Fatal("no memory lines")
					}
				}
			}
		})
	}
}
