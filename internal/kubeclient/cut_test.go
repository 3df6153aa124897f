package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An API server's refusal of megabytes keeps what the writers read of it
// (its reason, so Refusal; its code) in at most MaxErrorText of text.
func TestCutKeepsWhatCallersRead(t *testing.T) {
	huge := strings.Repeat("denied \x1b[2J", 300<<10)
	gr := schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}
	for _, tc := range []struct {
		name    string
		err     error
		check   func(error) bool
		refusal bool
	}{
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New(huge)), apierrors.IsForbidden, true},
		{"internal", apierrors.NewInternalError(errors.New(huge)), apierrors.IsInternalError, false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "EndpointSlice"}, "web", nil), apierrors.IsInvalid, true},
		{"wrapped", fmt.Errorf("create: %w", apierrors.NewConflict(gr, "web", errors.New(huge))), apierrors.IsConflict, true},
		{"timeout", fmt.Errorf("%s: %w", huge, context.DeadlineExceeded), IsTimeout, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := Cut(tc.err)
			if n := len(cut.Error()); n > MaxErrorText+64 {
				t.Errorf("cut to %d bytes, want at most %d and a count", n, MaxErrorText)
			}
			if strings.Contains(cut.Error(), "\x1b") {
				t.Error("the cut text holds an escape character")
			}
			if !tc.check(cut) {
				t.Errorf("%v is no longer what it was", cut)
			}
			if Refusal(cut) != tc.refusal {
				t.Errorf("Refusal = %v, want %v", !tc.refusal, tc.refusal)
			}
		})
	}
	short := apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "web")
	if got := Cut(short); got != short { //nolint:errorlint // the very error, not one like it
		t.Errorf("a short error was replaced: %v", got)
	}
	many := &metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid, Message: "x",
		Details: &metav1.StatusDetails{Causes: make([]metav1.StatusCause, 10000)}}
	for i := range many.Details.Causes {
		many.Details.Causes[i].Message = huge[:100]
	}
	many.Message = huge
	got := Cut(&apierrors.StatusError{ErrStatus: *many})
	var st apierrors.APIStatus
	if !errors.As(got, &st) || len(st.Status().Details.Causes) > maxCauses {
		t.Errorf("the causes are not cut: %v", got)
	}
}

// Join keeps MaxErrorsJoined, counts the rest, and says of the cluster
// what all the errors say: a failure among the ones left out is kept.
func TestJoinBounded(t *testing.T) {
	gr := schema.GroupResource{Resource: "serviceimports"}
	refusals := make([]error, 1000)
	for i := range refusals {
		refusals[i] = apierrors.NewForbidden(gr, fmt.Sprint(i), errors.New("denied"))
	}
	joined := Join(refusals...)
	if n := strings.Count(joined.Error(), "\n") + 1; n != MaxErrorsJoined+1 {
		t.Errorf("%d lines, want %d kept and one count", n, MaxErrorsJoined)
	}
	if !strings.Contains(joined.Error(), fmt.Sprintf("and %d more errors", 1000-MaxErrorsJoined)) {
		t.Errorf("no count of the rest: %v", joined)
	}
	if MemberFailure(joined) != nil {
		t.Errorf("refusals only, joined, say the cluster failed: %v", MemberFailure(joined))
	}
	failed := errors.New("connection refused")
	withFailure := Join(append(refusals, failed)...)
	if f := MemberFailure(withFailure); f == nil || !errors.Is(f, failed) {
		t.Errorf("the failure left out is not kept: MemberFailure = %v", f)
	}
	if Join(nil, nil) != nil {
		t.Error("Join of nothing is not nil")
	}
}
