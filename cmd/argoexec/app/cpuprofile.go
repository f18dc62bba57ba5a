package app

// EnvCPUProfile names a file that init and wait write a CPU profile of
// their run to, for measuring where a step's CPU goes (issue 14). It works
// only in a binary built with the tag bench, which links runtime/pprof
// (GOFLAGS=-tags=bench hack/build.sh, or hack/e2e.sh with that GOFLAGS;
// the tag also compiles the e2e tier's figures): the default build leaves
// it out so that every wait does not map it, and logs a warning when the
// variable is set.
// Pass it through the ConfigMap's executor.env. The value "log"
// (cpuProfileToLog) puts the profile in the container's log instead, as
// the field pprof of a last "cpu profile" line, base64url without padding:
// a file in an emptyDir is gone once the kubelet tears down a finished
// pod's volumes, its log is not. The profile samples at 1 kHz
// (cpuProfileHz).
const EnvCPUProfile = "ARGOEXEC_CPU_PROFILE"
