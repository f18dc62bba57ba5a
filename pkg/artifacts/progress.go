package artifacts

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// progress logs bytes moved and throughput every interval while a transfer
// runs. It is both an io.Reader (minio's Progress hook reads len(p) as bytes
// sent) and an io.Writer (for downloads).
type progress struct {
	log      *logrus.Entry
	op       string
	total    int64
	every    time.Duration
	start    time.Time
	mu       sync.Mutex
	n        int64
	lastLog  time.Time
	finished bool
}

func newProgress(log *logrus.Entry, op string, total int64, every time.Duration) *progress {
	now := time.Now()
	return &progress{log: log, op: op, total: total, every: every, start: now, lastLog: now}
}

// Read records len(p) bytes moved; minio calls it as uploads progress.
func (p *progress) Read(b []byte) (int, error) {
	p.add(int64(len(b)))
	return len(b), nil
}

// Write records len(b) bytes moved.
func (p *progress) Write(b []byte) (int, error) {
	p.add(int64(len(b)))
	return len(b), nil
}

func (p *progress) add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += n
	if now := time.Now(); now.Sub(p.lastLog) >= p.every {
		p.lastLog = now
		p.emit(now, "in progress")
	}
}

// done logs the final line for transfers that lasted at least one interval.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if now := time.Now(); now.Sub(p.start) >= p.every {
		p.emit(now, "finished")
	}
}

func (p *progress) emit(now time.Time, state string) {
	secs := now.Sub(p.start).Seconds()
	mibps := 0.0
	if secs > 0 {
		mibps = float64(p.n) / (1 << 20) / secs
	}
	p.log.WithFields(logrus.Fields{
		"bytes": p.n, "total": p.total, "MiBps": float64(int(mibps*10)) / 10,
	}).Infof("%s %s", p.op, state)
}
