package flow

import (
	"context"
	"testing"
	"time"
)

func TestSaveWindow(t *testing.T) {
	t0 := time.Now().Add(time.Hour) // deadlines in the future: the contexts must not have expired
	now := t0.Add(3 * time.Second)
	tests := []struct {
		name                    string
		w                       saveWindow
		wantCollect, wantReport time.Time // zero: no deadline
		stop, wantStop          time.Duration
		collectSeesParentCancel bool
	}{
		{
			name:       "main exited: collecting unbounded, the report gets total from when it starts",
			w:          saveWindow{total: 20 * time.Second, reserve: 5 * time.Second},
			wantReport: now.Add(20 * time.Second),
			stop:       10 * time.Second, wantStop: 10 * time.Second,
			collectSeesParentCancel: true,
		},
		{
			name:        "saving: collecting ends reserve before the end, the report at the end",
			w:           saveWindow{start: t0, total: 20 * time.Second, reserve: 5 * time.Second},
			wantCollect: t0.Add(15 * time.Second), wantReport: t0.Add(20 * time.Second),
			stop: 10 * time.Second, wantStop: 10 * time.Second,
		},
		{
			name:        "saving: stopping main never takes the report's reserve",
			w:           saveWindow{start: t0, total: 8 * time.Second, reserve: 2 * time.Second},
			wantCollect: t0.Add(6 * time.Second), wantReport: t0.Add(8 * time.Second),
			stop: 10 * time.Second, wantStop: 6 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, cancelParent := context.WithCancel(context.Background())
			c, cancelC := tt.w.collect(parent)
			defer cancelC()
			r, cancelR := tt.w.report(parent, now)
			defer cancelR()
			if d, ok := c.Deadline(); ok != !tt.wantCollect.IsZero() || (ok && !d.Equal(tt.wantCollect)) {
				t.Errorf("collect deadline = %v (set %v), want %v", d, ok, tt.wantCollect)
			}
			if d, ok := r.Deadline(); !ok || !d.Equal(tt.wantReport) {
				t.Errorf("report deadline = %v (set %v), want %v", d, ok, tt.wantReport)
			}
			if got := tt.w.stopBound(tt.stop); got != tt.wantStop {
				t.Errorf("stopBound(%v) = %v, want %v", tt.stop, got, tt.wantStop)
			}
			cancelParent()
			if (c.Err() != nil) != tt.collectSeesParentCancel {
				t.Errorf("collect context after the parent's cancel: err = %v, want cancelled %v", c.Err(), tt.collectSeesParentCancel)
			}
			if r.Err() != nil {
				t.Errorf("the report must ignore the parent's cancel, got %v", r.Err())
			}
		})
	}
}
