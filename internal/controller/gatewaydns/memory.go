package gatewaydns

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// memory is what the controller remembers about one GatewayDNS between
// its syncs, behind one lock. Nothing here is needed for correctness
// after a restart: each part is rebuilt from the stored status or the
// controller's state (state.Headless) on the first sync since the start.
// What the controller wrote to each target is the publish package's own
// memory (publish.Writer), forgotten with this one.
type memory struct {
	mu sync.Mutex
	// uid is the GatewayDNS this memory is of: one made again under the
	// same name while its slices were being removed starts afresh.
	uid types.UID
	// serviceEvent is the time of the oldest gateway Service event not
	// yet written out (zero: none), for the propagation metric.
	serviceEvent time.Time
	// reasons holds, at the last sync, each cluster's status reason and,
	// under healthKey, its health reason; nameReasons each name's reason.
	// nil before the first sync since the start (events.go, names.go).
	reasons, nameReasons map[string]string
	// headless is, for a headless export, the ready endpoints last
	// published per source cluster: what stays published while a
	// cluster's endpoints are unknown. Pod addresses are too many and
	// change too often for status, which carries only their count. A
	// copy is kept in the controller's state on the management cluster
	// for the next controller to start from; never read back from a
	// target cluster, whose admin can write any slice there.
	headless map[string]contract.HeadlessEndpoints
	// headlessRecovered: the kept endpoints were loaded from the state
	// since the start (recoverHeadless).
	headlessRecovered bool
	// headlessSaved is what the state holds, as state.Encode wrote it;
	// unknown (not saved since the start) while headlessSavedKnown is false.
	headlessSaved      string
	headlessSavedKnown bool
	// since are the since-times status showed at the last sync (of each
	// target behind and each cluster not Ready); nil before the first
	// sync since the start, which takes them from the stored status.
	since *sinces
	// clusters are the status entries the last sync computed; nil before
	// the first since the start, which takes them from the stored status.
	// A kept cluster's last addresses come from here: the informer's copy
	// of status can lag this controller's own last write.
	clusters []v1alpha1.ClusterStatus
}

// memories holds the memory of every GatewayDNS by key ("<ns>/<name>").
// Its lock guards the map only; each memory has its own.
type memories struct {
	mu    sync.Mutex
	byKey map[string]*memory
}

func newMemories() *memories { return &memories{byKey: map[string]*memory{}} }

// of returns the memory of the GatewayDNS key with UID uid, made on first
// use; one of another UID (the GatewayDNS was made again) is replaced. An
// empty uid takes the memory whatever its UID.
func (m *memories) of(key string, uid types.UID) *memory {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.byKey[key]
	if mem == nil || (uid != "" && mem.uid != "" && mem.uid != uid) {
		mem = &memory{}
		m.byKey[key] = mem
	}
	if uid != "" {
		mem.uid = uid
	}
	return mem
}

// forget drops everything remembered of key: the GatewayDNS is gone.
func (m *memories) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byKey, key)
}

// noteServiceEvent records at when a gateway Service event reached key,
// unless an older one is still not written out.
func (mem *memory) noteServiceEvent(at time.Time) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if mem.serviceEvent.IsZero() {
		mem.serviceEvent = at
	}
}

// takeServiceEvent returns the oldest Service event not written out and
// clears it: the slices are written now.
func (mem *memory) takeServiceEvent() (time.Time, bool) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	t := mem.serviceEvent
	mem.serviceEvent = time.Time{}
	return t, !t.IsZero()
}

// lastReasons returns the cluster reasons of the last sync (false
// before the first since the start) and records now in their place.
func (mem *memory) lastReasons(now map[string]string) (map[string]string, bool) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	before := mem.reasons
	mem.reasons = now
	return before, before != nil
}

// lastNameReasons is lastReasons for the names' reasons.
func (mem *memory) lastNameReasons(now map[string]string) (map[string]string, bool) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	before := mem.nameReasons
	mem.nameReasons = now
	return before, before != nil
}

// lastHeadless returns the endpoints the last sync published per cluster.
func (mem *memory) lastHeadless() map[string]contract.HeadlessEndpoints {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	return mem.headless
}

// setHeadless records what a sync published; empty forgets it.
func (mem *memory) setHeadless(eps map[string]contract.HeadlessEndpoints) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if len(eps) == 0 {
		eps = nil
	}
	mem.headless = eps
}

// recovered reports whether the kept endpoints were loaded from the state.
func (mem *memory) recovered() bool {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	return mem.headlessRecovered
}

func (mem *memory) setRecovered() {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	mem.headlessRecovered = true
}

// savedHeadless reports whether the state is known to hold data.
func (mem *memory) savedHeadless(data string) bool {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	return mem.headlessSavedKnown && mem.headlessSaved == data
}

func (mem *memory) setSavedHeadless(data string) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	mem.headlessSaved, mem.headlessSavedKnown = data, true
}

// lastSinces returns the since-times of the last sync; before the first
// since the start, those the stored status st holds.
func (mem *memory) lastSinces(st v1alpha1.GatewayDNSStatus) sinces {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if mem.since == nil {
		return sincesFromStatus(st)
	}
	return *mem.since
}

func (mem *memory) setSinces(s sinces) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	mem.since = &s
}

// withLastClusters returns gd with the status entries of the last sync
// in place of the stored ones, unless there was none since the start.
// gd is not changed.
func (mem *memory) withLastClusters(gd *v1alpha1.GatewayDNS) *v1alpha1.GatewayDNS {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if mem.clusters == nil {
		return gd
	}
	cp := *gd
	cp.Status.Clusters = mem.clusters
	return &cp
}

func (mem *memory) setClusters(clusters []v1alpha1.ClusterStatus) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if clusters == nil {
		clusters = []v1alpha1.ClusterStatus{}
	}
	mem.clusters = clusters
}
