package controller

import (
	"testing"
	"time"
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
