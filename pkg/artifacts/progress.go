package artifacts

import (
	"math"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"
)

// DefaultProgressEvery is how often a long transfer logs its progress when
// ProgressConfig.Every is zero.
const DefaultProgressEvery = 5 * time.Second

// ProgressConfig is how transfers report progress: the clock they are timed
// by and how often they log. The zero value uses the real clock and
// DefaultProgressEvery.
type ProgressConfig struct {
	// Clock times transfers; nil means the real clock. Tests pass a
	// k8s.io/utils/clock/testing.FakeClock.
	Clock clock.WithTicker
	// Every is the logging interval; zero means DefaultProgressEvery.
	Every time.Duration
}

// Start begins timing one transfer, op (say "upload"), of total bytes (zero
// when unknown), that logs through log.
func (c ProgressConfig) Start(log *logrus.Entry, op string, total int64) *Progress {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Every <= 0 {
		c.Every = DefaultProgressEvery
	}
	now := c.Clock.Now()
	return &Progress{clock: c.Clock, every: c.Every, log: log, op: op, total: total, start: now, lastLog: now}
}

// Progress is the progress of one transfer: every upload, download and
// output archive uses it. A transfer that lasts at least one interval logs
// "OP in progress" with its bytes and MiB/s each interval, and "OP finished"
// at Done; a shorter one logs nothing.
//
// Bytes are counted through Add (or Read and Write, so a Progress can be
// minio's upload hook or an io.MultiWriter target), or sampled by Poll when
// something else writes the file. It is safe for concurrent use.
type Progress struct {
	clock clock.WithTicker
	every time.Duration
	log   *logrus.Entry
	op    string
	total int64
	start time.Time

	mu       sync.Mutex
	n        int64
	lastLog  time.Time
	finished bool
}

// Add records n more bytes moved, and logs if an interval has passed since
// the last line.
func (p *Progress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += n
	if now := p.clock.Now(); now.Sub(p.lastLog) >= p.every {
		p.lastLog = now
		p.emit(now, "in progress")
	}
}

// Read records len(b) bytes moved and reads nothing: minio-go's
// PutObjectOptions.Progress reads each part it has sent.
func (p *Progress) Read(b []byte) (int, error) {
	p.Add(int64(len(b)))
	return len(b), nil
}

// Write records len(b) bytes moved.
func (p *Progress) Write(b []byte) (int, error) {
	p.Add(int64(len(b)))
	return len(b), nil
}

// Poll samples size every interval, logging each sample, until stop is
// called; stop takes a last sample, logs the final line as Done does, and
// returns once the sampling goroutine has ended. It is for a file that
// something else writes (an output archive the backend copies), where there
// is no stream to count. A sample whose size fails is skipped.
func (p *Progress) Poll(size func() (int64, error)) (stop func()) {
	set := func(force bool) {
		n, err := size()
		if err != nil {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.n = n
		if force {
			now := p.clock.Now()
			p.lastLog = now
			p.emit(now, "in progress")
		}
	}
	t := p.clock.NewTicker(p.every)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C():
				set(true)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		set(false)
		p.Done()
	}
}

// Done ends the transfer: it logs the final line if the transfer lasted at
// least one interval. Later calls do nothing.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if now := p.clock.Now(); now.Sub(p.start) >= p.every {
		p.emit(now, "finished")
	}
}

// emit logs one line; p.mu is held.
func (p *Progress) emit(now time.Time, state string) {
	mibps := 0.0
	if secs := now.Sub(p.start).Seconds(); secs > 0 {
		mibps = math.Round(float64(p.n)/(1<<20)/secs*10) / 10
	}
	fields := logrus.Fields{"bytes": p.n, "MiBps": mibps}
	if p.total > 0 {
		fields["total"] = p.total
	}
	p.log.WithFields(fields).Infof("%s %s", p.op, state)
}
