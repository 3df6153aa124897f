package gatewaydns

import (
	"testing"
	"time"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

// A GatewayDNS's memory is one: what one sync records the next finds,
// forget drops all of it, and a GatewayDNS made again under the same name
// (another UID) starts afresh.
func TestMemoriesOfAndForget(t *testing.T) {
	m := newMemories()
	at := time.Unix(100, 0)
	m.of("ns/gw", "").noteServiceEvent(at)
	mem := m.of("ns/gw", "uid-1")
	if _, known := mem.lastReasons(map[string]string{"a": "Published"}); known {
		t.Error("reasons known before the first sync")
	}
	if got, ok := m.of("ns/gw", "uid-1").takeServiceEvent(); !ok || !got.Equal(at) {
		t.Errorf("service event %v %v, want %v noted before the first sync", got, ok, at)
	}
	if before, known := m.of("ns/gw", "uid-1").lastReasons(nil); !known || before["a"] != "Published" {
		t.Errorf("reasons %v %v, want those of the last sync", before, known)
	}

	m.of("ns/gw", "uid-1").setRecovered()
	if !m.of("ns/gw", "").recovered() {
		t.Error("an empty UID took another memory")
	}
	if m.of("ns/gw", "uid-2").recovered() {
		t.Error("a GatewayDNS made again kept the memory of the one before")
	}
	m.of("ns/gw", "uid-2").setSavedHeadless("x")
	m.forget("ns/gw")
	if m.of("ns/gw", "uid-2").savedHeadless("x") {
		t.Error("memory kept after forget")
	}
}

// A kept cluster's last addresses come from the last sync, not from the
// informer's copy of status, which can lag the controller's own write;
// before the first sync since the start, from the stored status.
func TestMemoryLastClusters(t *testing.T) {
	stored := &v1alpha1.GatewayDNS{Status: v1alpha1.GatewayDNSStatus{Clusters: []v1alpha1.ClusterStatus{{Name: "a"}}}}
	mem := newMemories().of("ns/gw", "uid")
	if got := mem.withLastClusters(stored); got != stored {
		t.Errorf("before the first sync: %+v, want the stored status", got.Status)
	}
	mem.setClusters([]v1alpha1.ClusterStatus{{Name: "a", Addresses: []string{"10.0.0.1"}}})
	got := mem.withLastClusters(stored)
	if len(got.Status.Clusters) != 1 || len(got.Status.Clusters[0].Addresses) != 1 {
		t.Errorf("after a sync: %+v, want its entries", got.Status.Clusters)
	}
	if len(stored.Status.Clusters[0].Addresses) != 0 {
		t.Error("the stored GatewayDNS was changed")
	}
	mem.setClusters(nil)
	if got := mem.withLastClusters(stored); len(got.Status.Clusters) != 0 {
		t.Errorf("after a sync with no clusters: %+v, want none", got.Status.Clusters)
	}
}
