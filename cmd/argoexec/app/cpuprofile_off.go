//go:build !bench

package app

import "github.com/sirupsen/logrus"

// startCPUProfile warns that this binary cannot profile when path is set
// (see EnvCPUProfile) and returns a no-op.
func startCPUProfile(path string, log *logrus.Entry) (stop func()) {
	if path != "" {
		log.Warnf("%s=%s is ignored: this argoexec was built without the tag bench", EnvCPUProfile, path)
	}
	return func() {}
}
