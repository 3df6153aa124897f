package controller

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForEachMember: members are written side by side, never more than
// maxMemberWrites at once, and each member's error comes back at its
// index.
func TestForEachMember(t *testing.T) {
	for _, n := range []int{0, 1, 3, maxMemberWrites, 3*maxMemberWrites + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var running, most atomic.Int32
			var mu sync.Mutex
			done := map[int]bool{}
			errs := forEachMember(n, func(i int) error {
				now := running.Add(1)
				defer running.Add(-1)
				for {
					m := most.Load()
					if now <= m || most.CompareAndSwap(m, now) {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				done[i] = true
				mu.Unlock()
				if i%2 == 1 {
					return fmt.Errorf("member %d", i)
				}
				return nil
			})
			if len(errs) != n || len(done) != n {
				t.Fatalf("%d errors, %d members done; want %d", len(errs), len(done), n)
			}
			for i, err := range errs {
				if want := i%2 == 1; (err != nil) != want || (want && err.Error() != fmt.Sprintf("member %d", i)) {
					t.Errorf("error %d: %v", i, err)
				}
			}
			if got, want := most.Load(), int32(min(n, maxMemberWrites)); got > want || (n > 1 && got < 2) {
				t.Errorf("%d members at once, want 2..%d", got, want)
			}
			if errors.Join(errs...) == nil && n > 1 {
				t.Error("no error joined")
			}
		})
	}
}
