package app

import "testing"

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
