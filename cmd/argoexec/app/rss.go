package app

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/argoexec/argoexec/cmd/argoexec/internal/startcpu"
)

// memSampleInterval is how often the sampler reads /proc/self/statm. One
// read of the open file costs 2-5 µs on the 2-core testbed
// (BenchmarkMemSample; reading /proc/self/status anew costs 27-50 µs and
// smaps_rollup, which walks the page tables, 0.7-0.85 ms), so sampling
// every 10 ms costs at most 0.05% of a core. Go returns freed heap to the kernel
// slowly (the background scavenger), so a heap peak stays resident far
// longer than 10 ms and is seen.
const memSampleInterval = 10 * time.Millisecond

// memUsage is one reading of the process's resident memory, in KiB.
type memUsage struct {
	// anon is the resident anonymous memory: Go's heap, stacks, the
	// runtime's own, and copied-on-write pages of the binary's data (statm
	// resident - shared, which is RssAnon of /proc/self/status: argoexec
	// maps no shared memory). Nobody else maps these pages: this is what
	// the process costs per pod.
	anon int64
	// file is the resident file-backed memory (statm shared, RssFile):
	// in practice the binary's text and read-only data, which the page
	// cache shares between every container that runs the same image file.
	file int64
}

// parseStatm parses /proc/PID/statm ("size resident shared text lib data
// dt", in pages of pageKiB).
func parseStatm(b []byte, pageKiB int64) (memUsage, bool) {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return memUsage{}, false
	}
	resident, err1 := strconv.ParseInt(string(f[1]), 10, 64)
	shared, err2 := strconv.ParseInt(string(f[2]), 10, 64)
	if err1 != nil || err2 != nil || shared > resident {
		return memUsage{}, false
	}
	return memUsage{anon: (resident - shared) * pageKiB, file: shared * pageKiB}, true
}

// peakRSSKiB returns the VmHWM line of a /proc/PID/status file, in KiB:
// the kernel's own peak of the resident set, private and shared together.
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

// memSampler follows the process's private memory through a step: the
// kernel keeps the peak of the whole resident set (VmHWM) but not of its
// private part, so a goroutine samples it on a ticker and keeps the largest
// reading. Start it, then Stop it (which joins the goroutine and takes a
// last sample) before reading peaks.
type memSampler struct {
	clock    clock.WithTicker
	interval time.Duration
	read     func() (memUsage, bool)

	mu       sync.Mutex
	peakAnon int64 // largest anon read
	peakFile int64 // largest file read
	samples  int

	stop context.CancelFunc
	done chan struct{}
}

// newMemSampler returns a sampler that calls read every interval of clk.
func newMemSampler(clk clock.WithTicker, interval time.Duration, read func() (memUsage, bool)) *memSampler {
	return &memSampler{clock: clk, interval: interval, read: read}
}

// Start takes a first sample and starts the sampling goroutine; ctx ending
// stops the sampling too.
func (s *memSampler) Start(ctx context.Context) {
	s.sample()
	ctx, s.stop = context.WithCancel(ctx)
	s.done = make(chan struct{})
	t := s.clock.NewTicker(s.interval)
	go func() {
		defer close(s.done)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				s.sample()
			}
		}
	}()
}

// Stop ends the sampling goroutine, waits for it, and takes a last sample.
func (s *memSampler) Stop() {
	if s.stop != nil {
		s.stop()
		<-s.done
		s.stop = nil
	}
	s.sample()
}

func (s *memSampler) sample() {
	u, ok := s.read()
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	s.peakAnon = max(s.peakAnon, u.anon)
	s.peakFile = max(s.peakFile, u.file)
}

// memPeaks is what a step's memory came to.
type memPeaks struct {
	// hwm is VmHWM at the end (the kernel's peak of the whole RSS); zero
	// when unknown.
	hwm int64
	// anon and file are the largest private and shared readings sampled.
	anon, file int64
	// samples counts the readings; zero means /proc was unreadable.
	samples int
}

func (s *memSampler) peaks() memPeaks {
	s.mu.Lock()
	defer s.mu.Unlock()
	return memPeaks{anon: s.peakAnon, file: s.peakFile, samples: s.samples}
}

// statmReader reads /proc/self/statm through one open file (a pread per
// sample: no open, no allocation).
type statmReader struct {
	f       *os.File
	buf     []byte
	pageKiB int64
}

func openStatm() (*statmReader, error) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return nil, err
	}
	return &statmReader{f: f, buf: make([]byte, 128), pageKiB: int64(os.Getpagesize() / 1024)}, nil
}

// read implements memSampler's read; the sampler calls it from one
// goroutine at a time.
func (r *statmReader) read() (memUsage, bool) {
	n, err := r.f.ReadAt(r.buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return memUsage{}, false
	}
	return parseStatm(r.buf[:n], r.pageKiB)
}

// cpuTime is the CPU the process has used so far, user and system
// (getrusage RUSAGE_SELF: every thread, this process only).
func cpuTime() (user, sys time.Duration, err error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, err
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), nil
}

// stepUsage samples a step's memory from start to finish and logs, at its
// end, what an operator sizes the executor's requests from:
//
//	peakPrivate  largest private (anonymous) resident memory sampled: what
//	             this container costs on its own (memory request)
//	sharedFile   largest file-backed resident memory sampled: the binary's
//	             pages, shared through the page cache by every container
//	             running the same image file
//	peakRSS      VmHWM, both together (the kernel's own peak, what `peakRSS`
//	             was before private and shared were told apart)
//	cpu          user+system CPU of the whole process (CPU request), also
//	             apart as cpuUser and cpuSys
//	cpuInherited the part of cpu used before argoexec's packages were
//	             initialised: the Go runtime's start (2-3 ms on the testbed's
//	             host) and, in a container's first process, what the
//	             container runtime spent setting the container up before it
//	             executed argoexec (about 20 ms more; see package startcpu)
//	cpuOwn       cpu - cpuInherited: what argoexec itself used
//	cpuStart     the part of cpuOwn spent before the step began: package
//	             initialisation, flags and environment
//	gcCycles     garbage collections the step ran (each costs CPU)
type stepUsage struct {
	sampler  *memSampler
	statm    *statmReader
	cpuStart time.Duration // at the step's start; 0 if unknown
}

// startStepUsage starts sampling the process's memory every
// memSampleInterval of clk. Without /proc it samples nothing.
func startStepUsage(ctx context.Context, clk clock.WithTicker) *stepUsage {
	u := &stepUsage{}
	if user, sys, err := cpuTime(); err == nil {
		u.cpuStart = user + sys
	}
	read := func() (memUsage, bool) { return memUsage{}, false }
	if r, err := openStatm(); err == nil {
		u.statm, read = r, r.read
	}
	u.sampler = newMemSampler(clk, memSampleInterval, read)
	u.sampler.Start(ctx)
	return u
}

// finish stops the sampler and logs the `peak memory` line.
func (u *stepUsage) finish(log *logrus.Entry) {
	u.sampler.Stop()
	p := u.sampler.peaks()
	if u.statm != nil {
		_ = u.statm.f.Close()
	}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		p.hwm, _ = peakRSSKiB(status)
	}
	f := usageFields(p, cpuTime)
	inherited, ok := startcpu.At()
	if user, sys, err := cpuTime(); err == nil && ok && u.cpuStart > 0 {
		f["cpuInherited"] = ms(inherited)
		f["cpuOwn"] = ms(user + sys - inherited)
		f["cpuStart"] = ms(u.cpuStart - inherited)
	}
	f["gcCycles"] = gcCycles()
	log.WithFields(f).Info("peak memory")
}

// gcCycles is how many garbage collections the process has completed.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// usageFields are the fields of the `peak memory` line.
func usageFields(p memPeaks, cpu func() (user, sys time.Duration, err error)) logrus.Fields {
	f := logrus.Fields{}
	if p.samples > 0 {
		f["peakPrivate"] = mib(p.anon)
		f["sharedFile"] = mib(p.file)
	}
	if p.hwm > 0 {
		f["peakRSS"] = mib(p.hwm)
	}
	if user, sys, err := cpu(); err == nil {
		f["cpu"] = ms(user + sys)
		f["cpuUser"] = ms(user)
		f["cpuSys"] = ms(sys)
	}
	return f
}

func mib(kb int64) string { return fmt.Sprintf("%.1fMiB", float64(kb)/1024) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
