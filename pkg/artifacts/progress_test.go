package artifacts

import (
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	testclock "k8s.io/utils/clock/testing"
)

func TestProgressAdd(t *testing.T) {
	const every = 5 * time.Second
	tests := []struct {
		name string
		// steps are how far the clock moves before each Add of 1 MiB.
		steps []time.Duration
		// end is how far it moves after the last Add, before Done.
		end  time.Duration
		want []string
	}{
		{name: "shorter than an interval", steps: []time.Duration{0, time.Second, time.Second}, end: time.Second, want: nil},
		{name: "exactly one interval", steps: []time.Duration{0}, end: every, want: []string{"upload finished"}},
		{name: "several intervals", steps: []time.Duration{0, every, time.Second, every}, end: time.Second,
			want: []string{"upload in progress", "upload in progress", "upload finished"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testclock.NewFakeClock(time.Unix(0, 0))
			log, hook := logtest.NewNullLogger()
			p := ProgressConfig{Clock: clk, Every: every}.Start(logrus.NewEntry(log), "upload", 4<<20)
			for _, d := range tt.steps {
				clk.Step(d)
				p.Add(1 << 20)
			}
			clk.Step(tt.end)
			p.Done()
			p.Done() // a second Done logs nothing
			var got []string
			for _, e := range hook.AllEntries() {
				got = append(got, e.Message)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("lines %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("lines %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestProgressLineFields(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(0, 0))
	log, hook := logtest.NewNullLogger()
	p := ProgressConfig{Clock: clk, Every: time.Second}.Start(logrus.NewEntry(log), "download", 0)
	clk.Step(2 * time.Second)
	if _, err := p.Write(make([]byte, 3<<20)); err != nil {
		t.Fatal(err)
	}
	e := hook.LastEntry()
	if e == nil || e.Message != "download in progress" || e.Data["bytes"] != int64(3<<20) || e.Data["MiBps"] != 1.5 {
		t.Fatalf("entry %+v; want 3 MiB at 1.5 MiB/s", e)
	}
	if _, ok := e.Data["total"]; ok {
		t.Errorf("an unknown total is logged: %v", e.Data)
	}
}

func TestProgressDefaults(t *testing.T) {
	p := ProgressConfig{}.Start(logrus.NewEntry(logrus.New()), "x", 0)
	if p.every != DefaultProgressEvery || p.clock == nil {
		t.Errorf("every %v, clock %v; want DefaultProgressEvery and the real clock", p.every, p.clock)
	}
}

// TestProgressPoll: a file something else writes is sampled every interval;
// a quick one logs nothing.
func TestProgressPoll(t *testing.T) {
	t.Run("long", func(t *testing.T) {
		clk := testclock.NewFakeClock(time.Unix(0, 0))
		log, hook := logtest.NewNullLogger()
		p := ProgressConfig{Clock: clk, Every: time.Second}.Start(logrus.NewEntry(log), "archiving output", 0)
		sampled := make(chan struct{}, 10)
		var size int64
		stop := p.Poll(func() (int64, error) {
			size += 100
			sampled <- struct{}{}
			return size, nil
		})
		clk.Step(time.Second)
		<-sampled // the tick's sample; its line is logged before stop returns
		stop()
		entries := hook.AllEntries()
		if len(entries) != 2 || entries[0].Message != "archiving output in progress" || entries[0].Data["bytes"] != int64(100) ||
			entries[1].Message != "archiving output finished" || entries[1].Data["bytes"] != int64(200) {
			for _, e := range entries {
				t.Logf("%s %v", e.Message, e.Data)
			}
			t.Fatal("want one progress line at 100 bytes and a final one at 200")
		}
	})
	t.Run("quick", func(t *testing.T) {
		clk := testclock.NewFakeClock(time.Unix(0, 0))
		log, hook := logtest.NewNullLogger()
		p := ProgressConfig{Clock: clk, Every: time.Second}.Start(logrus.NewEntry(log), "archiving output", 0)
		stop := p.Poll(func() (int64, error) { return 1, nil })
		clk.Step(time.Second / 2)
		stop()
		if n := len(hook.AllEntries()); n != 0 {
			t.Errorf("a quick archive logged %d lines", n)
		}
	})
}
