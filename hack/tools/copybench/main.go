// Command copybench does one CopyFile through the k8sapi or kubelet backend
// and prints its wall time, its CPU and the process's peak RSS (VmHWM), for
// measuring the copy in a process as small as argoexec (the e2e test binary
// carries every test's dependencies). GOGC and GOMEMLIMIT apply as usual;
// argoexec sets GOGC=50 unless the environment sets it, and so does this.
// It also samples the process's anonymous memory (RssAnon: heap, stacks,
// buffers; what a process cannot share with others that map the same
// binary) every 10 ms during the copy and prints its peak; -cpuprofile
// writes a CPU profile of the copy.
//
//	copybench -backend k8sapi -kubeconfig K -namespace NS -pod P -path /data/big.bin
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/argoexec/argoexec/executor"
	"github.com/argoexec/argoexec/executor/k8sapi"
	"github.com/argoexec/argoexec/executor/kubelet"
	wf "github.com/argoexec/argoexec/pkg/apis/workflow"
)

func main() {
	backend := flag.String("backend", "k8sapi", "k8sapi or kubelet")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig (k8sapi)")
	ns := flag.String("namespace", "default", "pod namespace")
	pod := flag.String("pod", "", "pod name")
	path := flag.String("path", "/data/big.bin", "path in container main")
	level := flag.Int("level", 0, "gzip level (0: none)")
	kubeletHost := flag.String("kubelet-host", "10.88.0.1", "kubelet address (kubelet)")
	caFile := flag.String("ca", "/var/lib/argoexec-testbed/pki/ca.crt", "CA of the kubelet's serving cert (kubelet)")
	tokenFile := flag.String("token-file", "", "service-account token file (kubelet)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the copy to this file")
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	log := logrus.NewEntry(logrus.New())
	var x executor.ContainerRuntimeExecutor
	var err error
	switch *backend {
	case "k8sapi":
		x, err = k8sapi.New(k8sapi.Config{Kubeconfig: *kubeconfig, Namespace: *ns, PodName: *pod}, log)
	case "kubelet":
		x, err = kubelet.New(kubelet.Config{Host: *kubeletHost, Port: wf.DefaultKubeletPort, CAFile: *caFile, TokenFile: *tokenFile, Namespace: *ns, PodName: *pod}, log)
	default:
		err = fmt.Errorf("unknown backend %q", *backend)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "copybench:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "copybench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "copybench:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	before := peakRSS()
	privBefore := privateBytes()
	stopSampling, peakPrivate := samplePrivate()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "copybench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	if err := x.CopyFile(context.Background(), "main", *path, filepath.Join(dir, "out.tgz"), *level); err != nil {
		fmt.Fprintln(os.Stderr, "copybench:", err)
		os.Exit(1)
	}
	wall := time.Since(start)
	stopSampling()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	st, _ := os.Stat(filepath.Join(dir, "out.tgz"))
	fmt.Printf("backend=%s bytes=%d wall=%s cpu=%s peakRSS_before=%s peakRSS=%s anon_before=%.1fMiB peakAnon=%.1fMiB\n", *backend, st.Size(), wall.Round(time.Millisecond), cpu.Round(time.Millisecond), before, peakRSS(),
		float64(privBefore)/(1<<20), float64(peakPrivate())/(1<<20))
}

// privateBytes is RssAnon from /proc/self/status (cheap to read, unlike
// smaps_rollup, whose page walk showed in the CPU profile of the copy).
func privateBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssAnon:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// samplePrivate samples privateBytes every 10 ms until stop; peak is the
// largest sample (read it after stop).
func samplePrivate() (stop func(), peak func() int64) {
	var max int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if p := privateBytes(); p > max {
				max = p
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }, func() int64 { return max }
}

// peakRSS is VmHWM from /proc/self/status.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.Join(strings.Fields(v), "")
		}
	}
	return "?"
}
