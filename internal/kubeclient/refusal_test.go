package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRefusal(t *testing.T) {
	gr := schema.GroupResource{Resource: "endpointslices"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("create: %w", ErrNotOurs), true},
		{apierrors.NewForbidden(gr, "x", errors.New("denied by webhook")), true},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "EndpointSlice"}, "x", nil), true},
		{apierrors.NewAlreadyExists(gr, "x"), true},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), true},
		{apierrors.NewNotFound(gr, "x"), true},
		{apierrors.NewRequestEntityTooLargeError("too large"), true},
		{apierrors.NewInternalError(errors.New("failed calling webhook")), false},
		{apierrors.NewTooManyRequests("slow down", 1), false},
		{apierrors.NewServiceUnavailable("down"), false},
		{apierrors.NewTimeoutError("slow", 1), false},
		{apierrors.NewUnauthorized("expired"), false},
		{context.DeadlineExceeded, false},
		{errors.New("connection refused"), false},
		{nil, false},
	} {
		if got := Refusal(tc.err); got != tc.want {
			t.Errorf("Refusal(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// MemberFailure keeps of a write's errors those of the API server itself
// and drops the refusals of single objects, however they are joined.
func TestMemberFailure(t *testing.T) {
	gr := schema.GroupResource{Resource: "endpointslices"}
	forbidden := fmt.Errorf("create a: %w", apierrors.NewForbidden(gr, "a", errors.New("quota")))
	taken := fmt.Errorf("slice b: %w", ErrNotOurs)
	deadline := fmt.Errorf("create c: %w", context.DeadlineExceeded)
	unavailable := fmt.Errorf("update d: %w", apierrors.NewServiceUnavailable("down"))
	if err := MemberFailure(errors.Join(forbidden, taken)); err != nil {
		t.Errorf("refusals only: %v, want nil", err)
	}
	if err := MemberFailure(nil); err != nil {
		t.Errorf("nil: %v", err)
	}
	all := errors.Join(deadline, unavailable)
	if err := MemberFailure(all); err == nil || err.Error() != all.Error() {
		t.Errorf("failures only: %v, want the error itself", err)
	}
	mixed := MemberFailure(errors.Join(forbidden, deadline, errors.Join(taken, unavailable)))
	if !errors.Is(mixed, context.DeadlineExceeded) || mixed == nil || Refusal(mixed) ||
		errors.Is(mixed, ErrNotOurs) || mixed.Error() != deadline.Error()+"\n"+unavailable.Error() {
		t.Errorf("mixed: %q, want the deadline and the unavailable server only", mixed)
	}
	wrapped := fmt.Errorf("write member: %w", errors.Join(forbidden, taken))
	if err := MemberFailure(wrapped); err != nil {
		t.Errorf("wrapped refusals: %v, want nil", err)
	}
}
