package app

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/sirupsen/logrus"
)

// logPeakRSS logs the process's peak resident set size (VmHWM), so an
// operator can size the executor's memory request from real steps, and the
// e2e tier can measure it inside the pod. Silent where /proc is missing.
func logPeakRSS(log *logrus.Entry) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	kb, ok := peakRSSKiB(status)
	if !ok {
		return
	}
	log.WithField("peakRSS", fmt.Sprintf("%.1fMiB", float64(kb)/1024)).Info("peak memory")
}

// peakRSSKiB returns the VmHWM line of a /proc/PID/status file, in KiB.
func peakRSSKiB(status []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, found := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !found {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb, err == nil
	}
	return 0, false
}
