package clusterset

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMemberSyncsPerSecond bounds the syncs the events of one member
// cause (--member-syncs-per-second): as many at once, then as many a
// second. A member whose objects change without pause (an endpoint
// flapping) would otherwise keep a worker syncing its sets, and each
// sync writes into every other member.
const DefaultMemberSyncsPerSecond = 5

// memberIdle is how long a member's bucket is kept after its last event.
// A bucket idle that long is full again (its burst takes a second to
// fill), so dropping it changes nothing, and a member that is gone
// leaves nothing behind.
const memberIdle = time.Minute

// heldToLog is how many events of a member are held back before the
// member is logged, once per bucket: fewer are the first lists of its
// informers or a short burst, not a member to look at.
const heldToLog = 50

// memberRate holds back the events of each member past its rate. Events
// held back wait for one enqueue, due when the member's next token is:
// the work queue keeps one entry per key and the earliest time, so a
// member sending 100 events a second causes its rate of syncs, and the
// last of them reads the member's latest state.
type memberRate struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	members map[string]*memberBucket
	swept   time.Time
}

// memberBucket is the rate of one member.
type memberBucket struct {
	tokens *rate.Limiter
	// due is when the events held back are enqueued; until then an
	// event joins them without taking a token.
	due time.Time
	// last is the member's last event; held counts its events held
	// back since the bucket was made.
	last time.Time
	held int
}

func newMemberRate(perSecond int) *memberRate {
	return &memberRate{limit: rate.Limit(perSecond), burst: perSecond, members: map[string]*memberBucket{}}
}

// delay is how long an event of member at now waits before the sets it
// concerns are enqueued, 0 for at once. log is true for the heldToLog-th
// event held back since the member's bucket was made, for the one log
// line that names the member.
func (r *memberRate) delay(member string, now time.Time) (d time.Duration, log bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(now)
	b := r.members[member]
	if b == nil {
		b = &memberBucket{tokens: rate.NewLimiter(r.limit, r.burst)}
		r.members[member] = b
	}
	b.last = now
	if !now.Before(b.due) {
		d = b.tokens.ReserveN(now, 1).DelayFrom(now)
		if d == 0 {
			return 0, false
		}
		b.due = now.Add(d)
	}
	b.held++
	return b.due.Sub(now), b.held == heldToLog
}

// sweep drops, at most once per memberIdle, the buckets idle that long.
func (r *memberRate) sweep(now time.Time) {
	if now.Sub(r.swept) < memberIdle {
		return
	}
	r.swept = now
	for m, b := range r.members {
		if now.Sub(b.last) >= memberIdle {
			delete(r.members, m)
		}
	}
}
