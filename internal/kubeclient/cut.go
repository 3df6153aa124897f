package kubeclient

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/printable"
)

// Bounds on what the controller keeps of an error a workload cluster's API
// server sent: the server is the tenant's, and may answer every write with
// a message of megabytes. An error is kept, joined, logged, put into an
// Event and a status; each of those holds at most these.
const (
	// MaxErrorText is the most bytes of one error's text kept, what the
	// operator commands print of one string (printable.MaxBytes).
	MaxErrorText = printable.MaxBytes
	// MaxErrorsJoined is the most errors Join keeps of one write; the
	// rest are counted.
	MaxErrorsJoined = 8
	// maxCauses is the most causes of a Status kept.
	maxCauses = 4
)

// Cut is err with every text a server sent escaped and cut to
// MaxErrorText, keeping what the callers read of it: an API status keeps
// its code, reason and details (so Refusal and the apierrors checks answer
// as before), a timeout stays one. An error whose text is already short
// and printable is returned as it is. Cut keeps no reference to err, so a
// cut error holds only its bounded text.
func Cut(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if len(text) <= MaxErrorText && printable.IsLine(text) {
		return err
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		out := metav1.Status{Status: st.Status, Code: st.Code, Reason: st.Reason,
			Message: printable.Cut(st.Message, MaxErrorText)}
		if d := st.Details; d != nil {
			out.Details = &metav1.StatusDetails{Name: printable.Cut(d.Name, 256), Group: printable.Cut(d.Group, 256),
				Kind: printable.Cut(d.Kind, 256), RetryAfterSeconds: d.RetryAfterSeconds}
			for _, c := range d.Causes[:min(len(d.Causes), maxCauses)] {
				out.Details.Causes = append(out.Details.Causes, metav1.StatusCause{Type: metav1.CauseType(printable.Cut(string(c.Type), 256)),
					Message: printable.Cut(c.Message, MaxErrorText/maxCauses), Field: printable.Cut(c.Field, 256)})
			}
		}
		return &apierrors.StatusError{ErrStatus: out}
	}
	return &cutError{text: printable.Cut(text, MaxErrorText), timeout: IsTimeout(err)}
}

// cutError is the text of an error that is no API status, cut.
type cutError struct {
	text    string
	timeout bool
}

func (e *cutError) Error() string   { return e.text }
func (e *cutError) Timeout() bool   { return e.timeout }
func (e *cutError) Temporary() bool { return false }

// Join is errors.Join of at most MaxErrorsJoined of errs (nil ones
// dropped), and a count of the others. What MemberFailure says of the
// result is what it says of all of errs: where the errors kept are all
// refusals and one left out is not, that one is kept in the last place.
func Join(errs ...error) error {
	kept := make([]error, 0, min(len(errs), MaxErrorsJoined+1))
	left, failure := 0, error(nil)
	for _, err := range errs {
		switch {
		case err == nil:
		case len(kept) < MaxErrorsJoined:
			kept = append(kept, err)
		default:
			left++
			if failure == nil && MemberFailure(err) != nil {
				failure = err
			}
		}
	}
	if failure != nil && MemberFailure(errors.Join(kept...)) == nil {
		// The refusal it stands in for is counted instead.
		kept[len(kept)-1] = failure
	}
	if left > 0 {
		kept = append(kept, moreErrors(left))
	}
	return errors.Join(kept...)
}

// moreErrors counts the errors Join left out. It says nothing of the
// cluster (Refusal): the ones that did are kept.
type moreErrors int

func (n moreErrors) Error() string { return fmt.Sprintf("and %d more errors", int(n)) }
