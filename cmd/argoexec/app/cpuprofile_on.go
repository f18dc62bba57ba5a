//go:build bench

package app

import (
	"bytes"
	"encoding/base64"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/sirupsen/logrus"
)

// cpuProfileToLog is the EnvCPUProfile value that logs the profile.
const cpuProfileToLog = "log"

// cpuProfileHz is the sampling rate of EnvCPUProfile's profile: a small
// step's wait runs for about 30 ms of CPU, 3 samples at pprof's default
// 100 Hz; at 1 kHz it gives 30, and profiles of many steps are merged
// (go tool pprof -top FILE...).
const cpuProfileHz = 1000

// startCPUProfile starts a CPU profile that the returned func writes to
// path, or logs when path is cpuProfileToLog; nothing when path is empty.
func startCPUProfile(path string, log *logrus.Entry) (stop func()) {
	if path == "" {
		return func() {}
	}
	var (
		w         io.Writer
		buf       bytes.Buffer
		closeFile = func() error { return nil }
	)
	if path == cpuProfileToLog {
		w = &buf
	} else {
		f, err := os.Create(path)
		if err != nil {
			log.WithError(err).Warnf("%s: cannot create the CPU profile; running without it", EnvCPUProfile)
			return func() {}
		}
		w, closeFile = f, f.Close
	}
	// Set before StartCPUProfile, which then keeps it (and says on stderr
	// that it could not set its own 100 Hz).
	runtime.SetCPUProfileRate(cpuProfileHz)
	if err := pprof.StartCPUProfile(w); err != nil {
		_ = closeFile()
		log.WithError(err).Warnf("%s: cannot start the CPU profile; running without it", EnvCPUProfile)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := closeFile(); err != nil {
			log.WithError(err).Warnf("%s: write the CPU profile %s", EnvCPUProfile, path)
		}
		if path == cpuProfileToLog {
			log.WithField("pprof", base64.RawURLEncoding.EncodeToString(buf.Bytes())).Info("cpu profile")
		}
	}
}
