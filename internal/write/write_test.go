package write_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/write"
)

const ns = "xcc-dns"

func slice(name, owner string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}
	s.Name, s.Namespace = name, ns
	s.Labels = map[string]string{"owner": owner}
	return s
}

func ownedBy(owner string) func(*discoveryv1.EndpointSlice) bool {
	return func(s *discoveryv1.EndpointSlice) bool { return s.Labels["owner"] == owner }
}

// A name taken by the caller's own object gives that object back to be
// compared; by anyone else's, a refusal of that one object, and the
// holder is not changed.
func TestCreateNameTaken(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(slice("ours", "me"), slice("theirs", "you"))
	api := c.DiscoveryV1().EndpointSlices(ns)

	got, created, err := write.Create(ctx, api, slice("new", "me"), ownedBy("me"))
	if err != nil || !created || got.Name != "new" {
		t.Fatalf("create of a free name: %v, created %t, err %v", got, created, err)
	}
	got, created, err = write.Create(ctx, api, slice("ours", "me"), ownedBy("me"))
	if err != nil || created || got.Labels["owner"] != "me" {
		t.Fatalf("create over our own: %v, created %t, err %v; want the holder, not created", got, created, err)
	}
	_, created, err = write.Create(ctx, api, slice("theirs", "me"), ownedBy("me"))
	if !errors.Is(err, kubeclient.ErrNotOurs) || created || !write.Refusal(err) {
		t.Fatalf("create over another's: created %t, err %v; want ErrNotOurs, a refusal", created, err)
	}
	held, err := api.Get(ctx, "theirs", metav1.GetOptions{})
	if err != nil || held.Labels["owner"] != "you" {
		t.Fatalf("another's slice after the refused create: %v, %v", held, err)
	}
}

// Every delete names the UID read, and gone already is no error.
func TestDeleteCarriesTheUID(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	var uids []string
	c.PrependReactor("delete", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		p := d.GetDeleteOptions().Preconditions
		if p == nil || p.UID == nil {
			uids = append(uids, "<none>")
			return true, nil, errors.New("delete without a UID precondition")
		}
		uids = append(uids, string(*p.UID))
		return true, nil, apierrors.NewNotFound(discoveryv1.Resource("endpointslices"), d.GetName())
	})
	s := slice("a", "me")
	s.UID = types.UID("uid-1")
	if err := write.Delete(ctx, c.DiscoveryV1().EndpointSlices(ns), s); err != nil {
		t.Fatalf("delete of one gone: %v, want none", err)
	}
	if err := write.Delete(ctx, c.DiscoveryV1().EndpointSlices(ns), slice("b", "me")); err != nil {
		t.Fatalf("delete of one read without a UID: %v", err)
	}
	if len(uids) != 2 || uids[0] != "uid-1" || uids[1] != "" {
		t.Fatalf("preconditions sent %q, want [uid-1 \"\"]: the UID read, empty for one read without", uids)
	}
}

// frozen answers no call until its context ends.
type frozen struct {
	write.Client[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]
	calls *atomic.Int32
}

func (f frozen) Create(ctx context.Context, _ *discoveryv1.EndpointSlice, _ metav1.CreateOptions) (*discoveryv1.EndpointSlice, error) {
	f.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A write whose first call passes its deadline asks nothing more: a
// frozen cluster costs one deadline per write, not one per object.
func TestGateTripsOnce(t *testing.T) {
	var calls atomic.Int32
	g := write.NewGate(50 * time.Millisecond)
	api := write.Bound(write.Client[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](frozen{calls: &calls}), g)
	var errs write.Errors
	write.Each(3*write.Concurrency, func(i int) {
		_, err := api.Create(context.Background(), slice("a", "me"), metav1.CreateOptions{})
		errs.Add(err)
	})
	err := errs.Err()
	if !write.NotAnswering(err) || write.Refusal(err) {
		t.Fatalf("error %v: want not answering, not a refusal", err)
	}
	if n := calls.Load(); n > write.Concurrency {
		t.Fatalf("%d calls reached the frozen cluster, want at most the %d in flight when the first passed its deadline", n, write.Concurrency)
	}
	// A new write asks again.
	api = write.Bound(write.Client[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](frozen{calls: &calls}), write.NewGate(time.Millisecond))
	before := calls.Load()
	_, _ = api.Create(context.Background(), slice("a", "me"), metav1.CreateOptions{})
	if calls.Load() != before+1 {
		t.Fatal("a new gate did not ask the cluster")
	}
}

// A write whose context ends (the controller stops) asks nothing more,
// whether or not the client honours the context: the fake here does
// not, as a client busy with each call's error would not either.
func TestGateAsksNothingOnceStopped(t *testing.T) {
	const stopAfter = 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int32
	cs := fake.NewClientset()
	cs.PrependReactor("create", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) == stopAfter {
			cancel()
		}
		return false, nil, nil
	})
	api := write.Bound(write.Client[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](cs.DiscoveryV1().EndpointSlices(ns)),
		write.NewGate(time.Minute))
	var errs write.Errors
	write.Each(4*write.Concurrency, func(i int) {
		s := slice("a", "me")
		s.Name = fmt.Sprint("s", i)
		_, err := api.Create(ctx, s, metav1.CreateOptions{})
		errs.Add(err)
	})
	if n := calls.Load(); n > stopAfter+write.Concurrency {
		t.Fatalf("%d calls reached the cluster, want at most the %d in flight when the write stopped", n, stopAfter+write.Concurrency)
	}
	if err := errs.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v: want the write's context's", err)
	}
}
