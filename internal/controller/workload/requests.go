package workload

import (
	"context"
	"net/http"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// Requests observes what a workload client asks of its API server, for
// the controller's metrics; nil fields are not called.
type Requests struct {
	// Done is called once a request has its answer's status, or none,
	// with its method and the answer's class (AnswerClass).
	Done func(method, class string)
	// Throttled is called with how long a request waited for the
	// cluster's rate limiter before it was sent.
	Throttled func(time.Duration)
}

// Answer classes of Requests.Done: a 429 is apart from the other 4xx, as
// it says the API server sheds load rather than refuses an object.
const (
	AnswerOK        = "2xx"
	AnswerRedirect  = "3xx"
	AnswerRefused   = "4xx"
	AnswerThrottled = "429"
	AnswerFailed    = "5xx"
	AnswerNone      = "none"
)

// AnswerClass is the class of a response's status code: a bounded label,
// whatever code a tenant's API server makes up.
func AnswerClass(code int) string {
	switch {
	case code == http.StatusTooManyRequests:
		return AnswerThrottled
	case code >= 500 && code < 600:
		return AnswerFailed
	case code >= 400 && code < 500:
		return AnswerRefused
	case code >= 300 && code < 400:
		return AnswerRedirect
	case code >= 200 && code < 300:
		return AnswerOK
	}
	return AnswerNone
}

// countRequests reports each request's answer to done.
func countRequests(rt http.RoundTripper, done func(method, class string)) http.RoundTripper {
	return &requestCounter{rt: rt, done: done}
}

type requestCounter struct {
	rt   http.RoundTripper
	done func(method, class string)
}

func (c *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	class := AnswerNone
	if err == nil && resp != nil {
		class = AnswerClass(resp.StatusCode)
	}
	c.done(req.Method, class)
	return resp, err
}

// WrappedRoundTripper lets client-go's debugging see the transport below.
func (c *requestCounter) WrappedRoundTripper() http.RoundTripper { return c.rt }

// timedLimiter reports how long each request waited for the limiter.
type timedLimiter struct {
	flowcontrol.RateLimiter
	waited func(time.Duration)
}

func (l timedLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	l.waited(time.Since(start))
	return err
}

var _ flowcontrol.RateLimiter = timedLimiter{}
