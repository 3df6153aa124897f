package clusterset

import (
	"testing"
	"time"
)

// 100 events a second of one member for 2 s become at most the member's
// burst plus its rate a second of enqueues; none waits more than one
// interval of the rate, so the last event is synced after it came;
// another member's event goes at once, and a bucket idle for memberIdle
// is dropped.
func TestMemberRateBoundsSyncsOfOneMember(t *testing.T) {
	const perSecond = 5
	r := newMemberRate(perSecond)
	t0 := time.Unix(1000, 0)
	enqueues := map[time.Time]bool{} // distinct enqueue times of member a
	var last time.Time
	logged := 0
	for i := range 200 {
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		d, log := r.delay("ns/a", now)
		if log {
			logged++
		}
		if d < 0 || d > time.Second/perSecond {
			t.Fatalf("event %d waits %v: want 0 to %v", i, d, time.Second/perSecond)
		}
		enqueues[now.Add(d)] = true
		last = now.Add(d)
		if i == 100 {
			if d, _ := r.delay("ns/b", now); d != 0 {
				t.Errorf("another member's first event waits %v behind the flapping one", d)
			}
		}
	}
	end := t0.Add(199 * 10 * time.Millisecond)
	if bound := perSecond + perSecond*2; len(enqueues) > bound {
		t.Errorf("200 events in 2 s enqueued at %d times; want at most %d", len(enqueues), bound)
	}
	if last.Before(end) {
		t.Errorf("the last event is enqueued at %v, before it came at %v", last, end)
	}
	if logged != 1 {
		t.Errorf("the member was logged %d times; want once", logged)
	}
	later := end.Add(memberIdle)
	if d, _ := r.delay("ns/c", later); d != 0 {
		t.Errorf("a new member waits %v", d)
	}
	if _, ok := r.members["ns/a"]; ok {
		t.Error("member a's bucket was kept after it was idle for memberIdle")
	}
}
