package kubeclient

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrNotOurs is wrapped when the name of an object the controller would
// write is held by an object it did not write: that one is never
// overwritten, and only the one object is refused.
var ErrNotOurs = errors.New("an object of that name exists and is not labelled as the controller's")

// Refusal reports whether err is an API server's answer about one object:
// denied (RBAC, a webhook, a quota), invalid, its name another's, changed
// or gone meanwhile, too large. Anything else (no answer, a refused
// connection, throttling, a server error, a webhook that could not be
// called) says nothing of the object and is the server's own failure.
// Every writer into a workload cluster uses it: a refusal costs its
// object, a failure backs off the cluster.
func Refusal(err error) bool {
	if _, counted := err.(moreErrors); counted { //nolint:errorlint // only Join's own count, never one wrapped
		return true
	}
	if errors.Is(err, ErrNotOurs) {
		return true
	}
	switch apierrors.ReasonForError(err) {
	case metav1.StatusReasonForbidden, metav1.StatusReasonInvalid, metav1.StatusReasonAlreadyExists,
		metav1.StatusReasonConflict, metav1.StatusReasonNotFound, metav1.StatusReasonGone,
		metav1.StatusReasonBadRequest, metav1.StatusReasonRequestEntityTooLarge,
		metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable, metav1.StatusReasonUnsupportedMediaType:
		return true
	}
	return false
}

// MemberFailure is what of err, the errors of a write into one cluster,
// is the cluster's own failure (not a Refusal): err itself when none of
// it is a refusal, nil when all of it is, else its other errors, joined.
// Joined errors (errors.Join, several %w) are looked at one by one, so a
// write that had one object refused and one call time out still failed.
func MemberFailure(err error) error {
	failed, _ := memberFailure(err)
	return failed
}

// memberFailure returns MemberFailure(err) and whether that is all of err.
func memberFailure(err error) (error, bool) {
	// Each node of the wrap tree is looked at on its own, so not errors.As.
	switch e := err.(type) { //nolint:errorlint // the walk unwraps itself
	case nil:
		return nil, true
	case interface{ Unwrap() []error }:
		var failed []error
		whole := true
		for _, c := range e.Unwrap() {
			f, all := memberFailure(c)
			whole = whole && all
			if f != nil {
				failed = append(failed, f)
			}
		}
		switch {
		case whole:
			return err, true
		case len(failed) == 0:
			return nil, false
		}
		return errors.Join(failed...), false
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			if f, _ := memberFailure(inner); f == nil {
				return nil, false
			}
			return err, true
		}
	}
	if Refusal(err) {
		return nil, false
	}
	return err, true
}

// Backoff is the wait after failures in a row: minWait after the first,
// doubling with each one more, never above maxWait. Every writer into a
// workload cluster waits by it: a cluster's lane after its failures, an
// import after its refusals.
func Backoff(minWait, maxWait time.Duration, failures int) time.Duration {
	d := minWait
	for i := 1; i < failures && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}
