package app

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"
)

// memSampleInterval is how often the sampler reads /proc/self/status. One
// read costs about 55 µs on the 2-core testbed (BenchmarkReadProcStatus;
// smaps_rollup, which walks the page tables, costs 0.7 ms), so sampling
// every 50 ms costs about 0.1% of a core, 1 ms of CPU in a one-second step.
// Go returns freed heap to the kernel slowly (the background scavenger),
// so a heap peak stays resident far longer than 50 ms and is seen.
const memSampleInterval = 50 * time.Millisecond

// memUsage is one reading of the process's memory, in KiB, from
// /proc/self/status.
type memUsage struct {
	// hwm is VmHWM: the kernel's own peak of the resident set, private and
	// shared pages together.
	hwm int64
	// anon is RssAnon: resident anonymous pages (Go's heap, stacks, the
	// runtime's own memory, and copied-on-write pages of the binary's
	// data). Nobody else maps them: this is what the process costs per pod.
	anon int64
	// file is RssFile: resident file-backed pages, in practice the binary's
	// text and read-only data. The page cache shares them between every
	// container that runs the same image file.
	file int64
}

// readMemUsage parses a /proc/PID/status file.
func readMemUsage(status []byte) (memUsage, bool) {
	var u memUsage
	fields := map[string]*int64{"VmHWM:": &u.hwm, "RssAnon:": &u.anon, "RssFile:": &u.file}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		dst, ok := fields[string(f[0])]
		if !ok {
			continue
		}
		if len(f) != 3 || string(f[2]) != "kB" {
			return memUsage{}, false
		}
		kb, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			return memUsage{}, false
		}
		*dst = kb
		found++
	}
	if found != len(fields) {
		return memUsage{}, false
	}
	return u, true
}

// memSampler follows the process's private memory through a step: the
// kernel keeps the peak of the whole resident set (VmHWM) but not of its
// private part, so a goroutine samples RssAnon on a ticker and keeps the
// largest reading. Start it, then Stop it (which joins the goroutine and
// takes a last sample) before logging.
type memSampler struct {
	clock    clock.WithTicker
	interval time.Duration
	read     func() ([]byte, error)

	mu       sync.Mutex
	peakAnon int64 // largest RssAnon read
	peakFile int64 // largest RssFile read
	last     memUsage
	samples  int

	stop context.CancelFunc
	done chan struct{}
}

// newMemSampler returns a sampler that reads status (os.ReadFile of
// /proc/self/status in argoexec) every interval of clk.
func newMemSampler(clk clock.WithTicker, interval time.Duration, status func() ([]byte, error)) *memSampler {
	return &memSampler{clock: clk, interval: interval, read: status}
}

// procSelfStatus reads the process's own status file.
func procSelfStatus() ([]byte, error) { return os.ReadFile("/proc/self/status") }

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
	b, err := s.read()
	if err != nil {
		return
	}
	u, ok := readMemUsage(b)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	s.last = u
	s.peakAnon = max(s.peakAnon, u.anon)
	s.peakFile = max(s.peakFile, u.file)
}

// memPeaks is what the sampler saw.
type memPeaks struct {
	// hwm is the last VmHWM read (the kernel's peak of the whole RSS).
	hwm int64
	// anon and file are the largest RssAnon and RssFile sampled.
	anon, file int64
	// samples counts the readings; zero means /proc was unreadable.
	samples int
}

func (s *memSampler) peaks() memPeaks {
	s.mu.Lock()
	defer s.mu.Unlock()
	return memPeaks{hwm: s.last.hwm, anon: s.peakAnon, file: s.peakFile, samples: s.samples}
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
//	peakPrivate  largest RssAnon sampled: the memory this container costs on
//	             its own (memory request)
//	sharedFile   largest RssFile sampled: the binary's pages, shared through
//	             the page cache by every container running the same image file
//	peakRSS      VmHWM, both together (the kernel's peak; what `peakRSS` was
//	             before private and shared were told apart)
//	cpu          user+system CPU of the whole process (CPU request)
type stepUsage struct {
	sampler *memSampler
}

// startStepUsage starts sampling the process's memory every
// memSampleInterval of clk.
func startStepUsage(ctx context.Context, clk clock.WithTicker) *stepUsage {
	s := newMemSampler(clk, memSampleInterval, procSelfStatus)
	s.Start(ctx)
	return &stepUsage{sampler: s}
}

// finish stops the sampler and logs the `peak memory` line. Silent about
// memory where /proc is missing.
func (u *stepUsage) finish(log *logrus.Entry) {
	u.sampler.Stop()
	log.WithFields(usageFields(u.sampler.peaks(), cpuTime)).Info("peak memory")
}

// usageFields are the fields of the `peak memory` line.
func usageFields(p memPeaks, cpu func() (user, sys time.Duration, err error)) logrus.Fields {
	f := logrus.Fields{}
	if p.samples > 0 {
		f["peakPrivate"] = mib(p.anon)
		f["sharedFile"] = mib(p.file)
		f["peakRSS"] = mib(p.hwm)
	}
	if user, sys, err := cpu(); err == nil {
		f["cpu"] = fmt.Sprintf("%.1fms", float64(user+sys)/float64(time.Millisecond))
		f["cpuUser"] = fmt.Sprintf("%.1fms", float64(user)/float64(time.Millisecond))
		f["cpuSys"] = fmt.Sprintf("%.1fms", float64(sys)/float64(time.Millisecond))
	}
	return f
}

func mib(kb int64) string { return fmt.Sprintf("%.1fMiB", float64(kb)/1024) }
