package eastwest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/write"
)

// Apply brings the controller's Gateway API objects of export k in its
// member to want; nil removes them all. Routes go after their
// ListenerSet, and before it on removal. Only objects labelled as the
// controller's, of export k, are listed, changed or deleted; a name held
// by another's object is not written (kubeclient.ErrNotOurs), and when
// that is the ListenerSet's, neither are its routes.
func Apply(ctx context.Context, c gatewayclient.GatewayV1Interface, k aggregate.Key, want *Objects) error {
	if want == nil {
		want = &Objects{}
	}
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(SetLabels(k.Name)).String()}
	ns := k.Namespace
	var sets []*gatewayv1.ListenerSet
	if want.ListenerSet != nil {
		sets = []*gatewayv1.ListenerSet{want.ListenerSet}
	}
	routes := func() error {
		return errors.Join(
			applyKind(ctx, c.HTTPRoutes(ns), sel, want.HTTPRoutes, items(func(l *gatewayv1.HTTPRouteList) []gatewayv1.HTTPRoute { return l.Items }),
				func(o *gatewayv1.HTTPRoute) any { return o.Spec }, func(d, s *gatewayv1.HTTPRoute) { d.Spec = s.Spec }),
			applyKind(ctx, c.TLSRoutes(ns), sel, want.TLSRoutes, items(func(l *gatewayv1.TLSRouteList) []gatewayv1.TLSRoute { return l.Items }),
				func(o *gatewayv1.TLSRoute) any { return o.Spec }, func(d, s *gatewayv1.TLSRoute) { d.Spec = s.Spec }),
			applyKind(ctx, c.TCPRoutes(ns), sel, want.TCPRoutes, items(func(l *gatewayv1.TCPRouteList) []gatewayv1.TCPRoute { return l.Items }),
				func(o *gatewayv1.TCPRoute) any { return o.Spec }, func(d, s *gatewayv1.TCPRoute) { d.Spec = s.Spec }),
		)
	}
	setOf := func() error {
		return applyKind(ctx, c.ListenerSets(ns), sel, sets, items(func(l *gatewayv1.ListenerSetList) []gatewayv1.ListenerSet { return l.Items }),
			func(o *gatewayv1.ListenerSet) any { return o.Spec }, func(d, s *gatewayv1.ListenerSet) { d.Spec = s.Spec })
	}
	if len(sets) == 0 {
		return errors.Join(routes(), setOf())
	}
	if err := setOf(); err != nil {
		return fmt.Errorf("ListenerSet %s/%s: %w", ns, SetName(k.Name), err)
	}
	return routes()
}

// items turns a list's items into pointers.
func items[L any, T any](of func(*L) []T) func(*L) []*T {
	return func(l *L) []*T {
		in := of(l)
		out := make([]*T, len(in))
		for i := range in {
			out[i] = &in[i]
		}
		return out
	}
}

// applyKind brings the controller's objects of one kind, those sel
// lists, to want: each created, updated when its spec or labels differ,
// and the others deleted. spec is what is compared, setSpec copies it.
func applyKind[T metav1.Object, L any](ctx context.Context, c write.Client[T, *L], sel metav1.ListOptions, want []T, of func(*L) []T,
	spec func(T) any, setSpec func(dst, src T)) error {
	list, err := c.List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	same := func(held, d T) bool {
		return equality.Semantic.DeepEqual(spec(held), spec(d)) && equality.Semantic.DeepEqual(held.GetLabels(), d.GetLabels())
	}
	merge := func(held, d T) T {
		setSpec(held, d)
		held.SetLabels(d.GetLabels())
		return held
	}
	p := write.Diff(want, of(list), write.Kind[T]{Ours: ours[T], Same: same, Merge: merge})
	var errs []error
	for _, d := range p.NotOurs {
		errs = append(errs, write.NotOurs(d))
	}
	update := p.Update
	for _, d := range p.Create {
		got, created, err := write.Create(ctx, c, d, ours)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !created && !same(got, d): // one of ours made since the list
			update = append(update, merge(got, d))
		}
	}
	for _, u := range update {
		if _, err := write.Update(ctx, c, u); err != nil {
			errs = append(errs, fmt.Errorf("update %s: %w", u.GetName(), err))
		}
	}
	for _, o := range p.Delete {
		if err := write.Delete(ctx, c, o); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", o.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// ours reports whether o is labelled as the controller's, as the
// objects of an import are (objects.Ours).
func ours[T metav1.Object](o T) bool { return objects.Ours(o.GetLabels(), false) }

// Held are the exports of which the member of c holds any object
// labelled as the controller's east-west objects, in every namespace: a
// ListenerSet or a route whose set is gone already. A member without the
// Gateway API holds none. Apply(k, nil) of each removes them all.
func Held(ctx context.Context, c gatewayclient.GatewayV1Interface) ([]aggregate.Key, error) {
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(map[string]string{objects.LabelManagedBy: objects.ManagedByValue}).String()}
	keys := map[aggregate.Key]bool{}
	add := func(o metav1.Object) {
		if ours(o) && strings.HasPrefix(o.GetName(), setPrefix) {
			keys[aggregate.Key{Namespace: o.GetNamespace(), Name: o.GetLabels()[objects.LabelServiceName]}] = true
		}
	}
	lists := []func() error{
		func() error {
			return heldOf(ctx, c.ListenerSets(""), sel, func(l *gatewayv1.ListenerSetList) { each(l.Items, add) })
		},
		func() error {
			return heldOf(ctx, c.HTTPRoutes(""), sel, func(l *gatewayv1.HTTPRouteList) { each(l.Items, add) })
		},
		func() error {
			return heldOf(ctx, c.TLSRoutes(""), sel, func(l *gatewayv1.TLSRouteList) { each(l.Items, add) })
		},
		func() error {
			return heldOf(ctx, c.TCPRoutes(""), sel, func(l *gatewayv1.TCPRouteList) { each(l.Items, add) })
		},
	}
	for _, list := range lists {
		if err := list(); err != nil {
			return nil, err
		}
	}
	return slices.SortedFunc(maps.Keys(keys), aggregate.CompareKeys), nil
}

// lister lists one kind.
type lister[L any] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}

// heldOf lists one kind with sel and hands the list to add; a kind the
// member does not serve holds nothing.
func heldOf[L any](ctx context.Context, c lister[L], sel metav1.ListOptions, add func(L)) error {
	l, err := c.List(ctx, sel)
	switch {
	case apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("list the controller's east-west objects: %w", err)
	}
	add(l)
	return nil
}

// each calls f with a pointer to every item.
func each[T any, P interface {
	*T
	metav1.Object
}](items []T, f func(metav1.Object)) {
	for i := range items {
		f(P(&items[i]))
	}
}
