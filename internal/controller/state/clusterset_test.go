package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// webExport is shop/web with a Service of port http 80 and one slice of
// the given addresses, ready.
func webExport(addrs ...string) Export {
	s := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, Hostname: ptr.To("web-0")})
	}
	return Export{Namespace: "shop", Name: "web", Created: time.Unix(100, 0).UTC(),
		Service: &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.96.0.10",
			Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: 80}}},
		Slices: []discoveryv1.EndpointSlice{s}}
}

// Each kept ClusterSet loads back as saved; a later save replaces it, and
// one of nothing deletes it.
func TestClusterSetRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		cs   ClusterSet
	}{
		{"members written only", ClusterSet{UID: "u1", Written: map[string]string{"east": "dev-team/cluster-a", "west": "dev-team/cluster-b"}}},
		{"a last read", ClusterSet{UID: "u1", Written: map[string]string{"east": "dev-team/cluster-a"},
			Members: map[string]MemberRead{"east": {Exports: []Export{webExport("10.244.1.5", "10.244.1.6")}}}}},
		{"an export without Service, over the limit", ClusterSet{UID: "u1",
			Members: map[string]MemberRead{"west": {Exports: []Export{{Namespace: "shop", Name: "api", Created: time.Unix(5, 0).UTC(), OverLimit: true}}}}}},
		{"a member that exports nothing", ClusterSet{UID: "u1", Written: map[string]string{"east": "dev-team/cluster-a"},
			Members: map[string]MemberRead{"east": {}}}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			s := &ConfigMaps{Client: kube, Namespace: "xcc-dns"}
			if got, err := s.LoadClusterSet(ctx, "dev-team/prod"); err != nil || got != nil {
				t.Fatalf("nothing saved: got %v, %v", got, err)
			}
			if dropped, err := s.SaveClusterSet(ctx, "dev-team/prod", tc.cs); err != nil || dropped != nil {
				t.Fatalf("save: dropped %v, %v", dropped, err)
			}
			got, err := s.LoadClusterSet(ctx, "dev-team/prod")
			if err != nil || got == nil {
				t.Fatalf("load: %v, %v", got, err)
			}
			// Equal encodings: nothing lost or added on the way.
			if a, b := encoded(t, *got), encoded(t, tc.cs); a != b {
				t.Errorf("loaded %s\nwant %s", a, b)
			}
			if keys, err := s.ClusterSetKeys(ctx); err != nil || !slices.Equal(keys, []string{"dev-team/prod"}) {
				t.Errorf("keys %v, %v", keys, err)
			}
			if got, _ := s.LoadClusterSet(ctx, "dev-team/other"); got != nil {
				t.Errorf("another key loads %+v", got)
			}
			if _, err := s.SaveClusterSet(ctx, "dev-team/prod", ClusterSet{UID: "u1"}); err != nil {
				t.Fatal(err)
			}
			if list, _ := kube.CoreV1().ConfigMaps("xcc-dns").List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
				t.Errorf("after saving nothing, %d ConfigMaps stay", len(list.Items))
			}
		})
	}
}

func encoded(t *testing.T, cs ClusterSet) string {
	t.Helper()
	b, err := EncodeClusterSet(cs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Exports and slices listed in another order encode the same: the
// controller compares encodings to save only what changed.
func TestEncodeClusterSetOrder(t *testing.T) {
	api := webExport("10.244.1.7")
	api.Name = "api"
	web := webExport("10.244.1.5")
	web.Slices = append(web.Slices, web.Slices[0])
	web.Slices[1].Name = "web-0"
	one := ClusterSet{UID: "u", Members: map[string]MemberRead{"east": {Exports: []Export{web, api}}}}
	reversed := slices.Clone(web.Slices)
	slices.Reverse(reversed)
	web.Slices = reversed
	two := ClusterSet{UID: "u", Members: map[string]MemberRead{"east": {Exports: []Export{api, web}}}}
	a, err := EncodeClusterSet(one)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeClusterSet(two)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("same contents encode differently:\n%s\n%s", a, b)
	}
	if one.Members["east"].Exports[0].Name != "web" {
		t.Errorf("encoding reordered its input")
	}
}

// What does not unpack, decode or validate loads as ErrDamaged, and so
// does nothing of the ClusterSet; a ConfigMap naming another key holds
// nothing of this one.
func TestClusterSetDamaged(t *testing.T) {
	valid := ClusterSet{UID: "u1", Written: map[string]string{"east": "dev-team/cluster-a"},
		Members: map[string]MemberRead{"east": {Exports: []Export{webExport("10.244.1.5")}}}}
	packedOf := func(t *testing.T, v any) []byte {
		t.Helper()
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b, err := pack(data)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	with := func(edit func(*ClusterSet)) func(*testing.T) []byte {
		return func(t *testing.T) []byte {
			cs := valid
			cs.Written = map[string]string{"east": "dev-team/cluster-a"}
			cs.Members = map[string]MemberRead{"east": {Exports: []Export{webExport("10.244.1.5")}}}
			edit(&cs)
			return packedOf(t, cs)
		}
	}
	cases := []struct {
		name string
		data func(*testing.T) []byte
	}{
		{"not gzip", func(*testing.T) []byte { return []byte(`{"uid":"u1"}`) }},
		{"no data", func(*testing.T) []byte { return nil }},
		{"truncated", func(t *testing.T) []byte { b := packedOf(t, valid); return b[:len(b)/2] }},
		{"not JSON", func(t *testing.T) []byte { b, _ := pack([]byte("written: east")); return b }},
		{"wrong types", func(t *testing.T) []byte { return packedOf(t, map[string]any{"written": []string{"east"}}) }},
		{"empty cluster id written", with(func(cs *ClusterSet) { cs.Written[""] = "dev-team/cluster-b" })},
		{"cluster id no label", with(func(cs *ClusterSet) { cs.Members["East.1"] = MemberRead{} })},
		{"Cluster key without namespace", with(func(cs *ClusterSet) { cs.Written["west"] = "cluster-b" })},
		{"Cluster key of three parts", with(func(cs *ClusterSet) { cs.Written["west"] = "a/b/c" })},
		{"export unnamed", with(func(cs *ClusterSet) {
			cs.Members["east"] = MemberRead{Exports: []Export{{Namespace: "shop"}}}
		})},
		{"export twice", with(func(cs *ClusterSet) {
			cs.Members["east"] = MemberRead{Exports: []Export{webExport("10.244.1.5"), webExport("10.244.1.6")}}
		})},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := savedThenEdited(t, valid, func(cm *corev1.ConfigMap) { cm.BinaryData[clusterSetKey] = tc.data(t) })
			got, err := s.LoadClusterSet(ctx, "dev-team/prod")
			if !errors.Is(err, ErrDamaged) || got != nil {
				t.Errorf("got %+v, %v; want ErrDamaged", got, err)
			}
		})
	}
	t.Run("another key", func(t *testing.T) {
		s := savedThenEdited(t, valid, func(cm *corev1.ConfigMap) { cm.Annotations[AnnotationClusterSet] = "other/prod" })
		if got, err := s.LoadClusterSet(ctx, "dev-team/prod"); err != nil || got != nil {
			t.Errorf("a ConfigMap of another key: got %+v, %v", got, err)
		}
		if keys, _ := s.ClusterSetKeys(ctx); len(keys) != 0 {
			t.Errorf("keys %v: the ConfigMap is not at other/prod's name", keys)
		}
	})
}

// randomExport is shop/<name> with n endpoints of random hostnames: what
// compresses worst.
func randomExport(rnd *rand.Rand, name string, n int) Export {
	x := webExport()
	x.Name = name
	for i := range n {
		x.Slices[0].Endpoints = append(x.Slices[0].Endpoints, discoveryv1.Endpoint{
			Addresses: []string{fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff)},
			Hostname:  ptr.To(fmt.Sprintf("p%016x%016x%016x", rnd.Uint64(), rnd.Uint64(), rnd.Uint64()))})
	}
	return x
}

// Too large to keep whole, the largest last read is left out and the rest
// kept; with the members written alone too large, nothing is kept
// (ErrTooLarge) rather than a stale list.
func TestClusterSetTooLarge(t *testing.T) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	kube := fake.NewClientset()
	s := &ConfigMaps{Client: kube, Namespace: "xcc-dns"}
	cs := ClusterSet{UID: "u1", Written: map[string]string{"east": "dev-team/cluster-a", "west": "dev-team/cluster-b"},
		Members: map[string]MemberRead{
			"east": {Exports: []Export{randomExport(rnd, "big", 40000)}},
			"west": {Exports: []Export{webExport("10.244.2.5")}},
		}}
	dropped, err := s.SaveClusterSet(ctx, "dev-team/prod", cs)
	if err != nil || !slices.Equal(dropped, []string{"east"}) {
		t.Fatalf("dropped %v, %v; want east's read left out", dropped, err)
	}
	got, err := s.LoadClusterSet(ctx, "dev-team/prod")
	if err != nil || got == nil {
		t.Fatalf("load: %v, %v", got, err)
	}
	if _, ok := got.Members["east"]; ok || len(got.Members["west"].Exports) != 1 || len(got.Written) != 2 {
		t.Errorf("kept %d members' reads (east %v) and %d written; want west's read and both written",
			len(got.Members), ok, len(got.Written))
	}

	many := ClusterSet{UID: "u1", Written: map[string]string{}}
	for i := range 60000 {
		many.Written[fmt.Sprintf("c%016x", rnd.Uint64())] = fmt.Sprintf("dev-team/cluster-%d-%016x", i, rnd.Uint64())
	}
	if _, err := s.SaveClusterSet(ctx, "dev-team/prod", many); !errors.Is(err, ErrTooLarge) {
		t.Errorf("%d members written: err %v, want ErrTooLarge", len(many.Written), err)
	}
	if got, err := s.LoadClusterSet(ctx, "dev-team/prod"); err != nil || got != nil {
		t.Errorf("after a save too large, the stale state stays: %+v, %v", got, err)
	}
}

// savedThenEdited saves cs as dev-team/prod's state in a fake cluster,
// then changes its ConfigMap by hand with edit.
func savedThenEdited(t *testing.T, cs ClusterSet, edit func(*corev1.ConfigMap)) *ConfigMaps {
	t.Helper()
	ctx := context.Background()
	kube := fake.NewClientset()
	s := &ConfigMaps{Client: kube, Namespace: "xcc-dns"}
	if _, err := s.SaveClusterSet(ctx, "dev-team/prod", cs); err != nil {
		t.Fatal(err)
	}
	cms := kube.CoreV1().ConfigMaps("xcc-dns")
	cm, err := cms.Get(ctx, clusterSetName("dev-team/prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edit(cm)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return s
}
