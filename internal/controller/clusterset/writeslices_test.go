package clusterset

import (
	"context"
	"errors"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// contractSlice is a clusterset contract slice named name, the
// controller's (own) or another's.
func contractSlice(name string, uid types.UID, own bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}
	s.Name, s.Namespace, s.UID = name, testfixture.SliceNamespace, uid
	s.Labels = map[string]string{contract.LabelRecord: string(contract.KindClusterSet)}
	if own {
		s.Labels[contract.LabelManagedBy] = contract.ManagedByValue
	}
	return s
}

// A contract slice the controller no longer wants is deleted only if it
// is still the very slice read (UID precondition): one made anew under
// its name since is not the one the write decided on.
func TestWriteClusterSetSlicesDeletesWithUID(t *testing.T) {
	kube := fake.NewClientset(contractSlice("gone", "uid-now", true))
	var deleted []*metav1.Preconditions
	kube.PrependReactor("delete", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetDeleteOptions().Preconditions)
		return false, nil, nil
	})
	c := &Reconciler{cfg: Config{SliceNamespace: testfixture.SliceNamespace}}
	read := contractSlice("gone", "uid-read", true)
	err := c.writeClusterSetSlices(context.Background(), "dev/a", kube.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace),
		nil, []*discoveryv1.EndpointSlice{read}, contractWant{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0] == nil || deleted[0].UID == nil || *deleted[0].UID != "uid-read" {
		t.Fatalf("delete preconditions %+v, want the UID read (uid-read)", deleted)
	}
}

// A contract slice whose name another object holds is refused, and that
// object is never overwritten; one of the controller's own, not yet seen,
// is no error (the next sync writes it).
func TestWriteClusterSetSlicesNameTaken(t *testing.T) {
	kube := fake.NewClientset(contractSlice("theirs", "u1", false), contractSlice("ours", "u2", true))
	var updates int
	kube.PrependReactor("update", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		return false, nil, nil
	})
	c := &Reconciler{cfg: Config{SliceNamespace: testfixture.SliceNamespace}}
	want := contractWant{slices: []*discoveryv1.EndpointSlice{contractSlice("theirs", "", true), contractSlice("ours", "", true)}}
	err := c.writeClusterSetSlices(context.Background(), "dev/a", kube.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace), nil, nil, want)
	if !errors.Is(err, kubeclient.ErrNotOurs) || !kubeclient.Refusal(err) {
		t.Fatalf("err = %v, want ErrNotOurs, a refusal", err)
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 1 { //nolint:errorlint // the join itself
		t.Errorf("%d errors, want the one of the slice another holds: %v", n, err)
	}
	if updates != 0 {
		t.Errorf("%d updates: a slice whose name was taken was overwritten", updates)
	}
}

// TestReachable: a Headless import's contract slices hold the sources the
// member reaches only; one that reaches all keeps the import as it is.
func TestReachable(t *testing.T) {
	eps := map[string][]*discoveryv1.EndpointSlice{"a": {{}}, "b": {{}}, "c": {{}}}
	imp := aggregate.Import{Key: aggregate.Key{Namespace: "shop", Name: "db"}, Type: aggregate.ImportHeadless, Clusters: []string{"a", "b", "c"}}
	west := map[string]bool{"b": true}
	got, gotEps := reachable(imp, eps, func(id string) bool { return !west[id] })
	if !slices.Equal(got.Clusters, []string{"a", "c"}) || len(gotEps) != 2 || gotEps["b"] != nil {
		t.Errorf("east member: clusters %v, endpoints of %d sources; want a and c only", got.Clusters, len(gotEps))
	}
	if !slices.Equal(imp.Clusters, []string{"a", "b", "c"}) {
		t.Errorf("the import was changed: %v", imp.Clusters)
	}
	if got, _ := reachable(imp, eps, func(string) bool { return true }); !slices.Equal(got.Clusters, imp.Clusters) {
		t.Errorf("one network: %v", got.Clusters)
	}
}
