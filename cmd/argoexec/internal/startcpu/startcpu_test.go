package startcpu

import "testing"

// TestAtIsBeforeNow: the CPU recorded at init is known, not negative, and
// no more than the CPU used by now.
func TestAtIsBeforeNow(t *testing.T) {
	at, ok := At()
	if !ok {
		t.Fatal("getrusage failed at init")
	}
	for i := 0; i < 1e6; i++ {
		_ = i * i // use some CPU
	}
	if now := read(); at < 0 || at > now {
		t.Errorf("CPU at init %v, now %v", at, now)
	}
}
