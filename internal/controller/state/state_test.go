package state

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

func endpoints(addrs ...string) map[string]contract.HeadlessEndpoints {
	g := contract.HeadlessGroup{Ports: []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}}
	for _, a := range addrs {
		g.IPv4 = append(g.IPv4, contract.Endpoint{Address: a})
	}
	return map[string]contract.HeadlessEndpoints{"cluster-b": {Groups: []contract.HeadlessGroup{g}, Refused: []string{"not kept"}}}
}

// Save, Load, Save again (an update), Load, Save of nothing (a delete):
// what is loaded is what was saved, without the refusals.
func TestConfigMapsRoundTrip(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	s := &ConfigMaps{Client: kube, Namespace: "xcc-dns"}
	if got, err := s.Load(ctx, "dev-team/db"); err != nil || got != nil {
		t.Fatalf("nothing saved: got %v, %v", got, err)
	}
	for _, addrs := range [][]string{{"10.2.0.5"}, {"10.2.0.5", "10.2.0.6"}} {
		if err := s.Save(ctx, "dev-team/db", endpoints(addrs...)); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(ctx, "dev-team/db")
		if err != nil {
			t.Fatal(err)
		}
		if n := got["cluster-b"].Len(); n != len(addrs) || got["cluster-b"].Refused != nil {
			t.Errorf("loaded %+v, want %d endpoints and no refusals", got, len(addrs))
		}
	}
	if got, _ := s.Load(ctx, "dev-team/other"); got != nil {
		t.Errorf("another key loads %v", got)
	}
	if err := s.Save(ctx, "dev-team/db", nil); err != nil {
		t.Fatal(err)
	}
	list, _ := kube.CoreV1().ConfigMaps("xcc-dns").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 0 {
		t.Errorf("after saving nothing, %d ConfigMaps stay", len(list.Items))
	}
	if err := s.Save(ctx, "dev-team/db", nil); err != nil {
		t.Errorf("saving nothing twice: %v", err)
	}
}

// A ConfigMap at a key's name whose annotation names another key (a hand
// edit) holds nothing of that key; one too large to keep is refused.
func TestConfigMapsRefuse(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	s := &ConfigMaps{Client: kube, Namespace: "xcc-dns"}
	if err := s.Save(ctx, "dev-team/db", endpoints("10.2.0.5")); err != nil {
		t.Fatal(err)
	}
	cm, err := kube.CoreV1().ConfigMaps("xcc-dns").Get(ctx, headlessName("dev-team/db"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Annotations[contract.AnnotationGatewayRef] = "other/db"
	if _, err := kube.CoreV1().ConfigMaps("xcc-dns").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx, "dev-team/db"); err != nil || got != nil {
		t.Errorf("a ConfigMap of another key: got %v, %v", got, err)
	}
	// Pods with random hostnames: what compresses worst.
	rnd := rand.New(rand.NewPCG(1, 2))
	big := contract.HeadlessGroup{Ports: []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}}
	for i := range 40000 {
		big.IPv6 = append(big.IPv6, contract.Endpoint{Address: fmt.Sprintf("2001:db8::%x:%x", i, rnd.Uint32()&0xffff),
			Hostname: fmt.Sprintf("p%016x%016x%016x", rnd.Uint64(), rnd.Uint64(), rnd.Uint64())})
	}
	many := map[string]contract.HeadlessEndpoints{"cluster-b": {Groups: []contract.HeadlessGroup{big}}}
	if err := s.Save(ctx, "dev-team/db", many); !errors.Is(err, ErrTooLarge) {
		t.Errorf("%d endpoints: err %v, want ErrTooLarge", len(big.IPv6), err)
	}
	if got, err := s.Load(ctx, "dev-team/db"); err != nil || got != nil {
		t.Errorf("after a save too large, the stale state stays: %d clusters, %v", len(got), err)
	}
}

// Each write tells Written its kind and the bytes it stored, as the
// ConfigMap holds them; a delete or a failed write tells nothing.
func TestConfigMapsWritten(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	got := map[string]int{}
	s := &ConfigMaps{Client: kube, Namespace: "xcc-dns", Written: func(kind string, n int) { got[kind] = n }}
	if err := s.Save(ctx, "dev-team/db", endpoints("10.2.0.5", "10.2.0.6")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveClusterSet(ctx, "dev-team/prod", ClusterSet{UID: "u1", Written: map[string]string{"a": "dev-team/cluster-a"}}); err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	list, _ := kube.CoreV1().ConfigMaps("xcc-dns").List(ctx, metav1.ListOptions{})
	for _, cm := range list.Items {
		for _, b := range cm.BinaryData {
			stored[cm.Labels[LabelKind]] += len(b)
		}
	}
	if len(got) != 2 || got[KindHeadless] != stored[KindHeadless] || got[KindClusterSet] != stored[KindClusterSet] || got[KindHeadless] == 0 {
		t.Errorf("Written told %v, the ConfigMaps hold %v", got, stored)
	}
	clear(got)
	if err := s.Save(ctx, "dev-team/db", nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("a delete told Written %v", got)
	}
}
