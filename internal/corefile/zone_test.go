package corefile

import (
	"reflect"
	"strings"
	"testing"
)

// The server block that answers a zone: the managed block, one of the
// user's, or none when only the root block (which sends the zone
// upstream) would.
func TestFindZone(t *testing.T) {
	patched, _, err := Patch(kubeadmCorefile, Options{Zone: "xcc.test", ClusterSetZone: "clusterset.local", ForwardTo: "10.96.0.53", Service: "xcc-dns/xcc-dns"})
	if err != nil {
		t.Fatal(err)
	}
	byHand := kubeadmCorefile + "\ntest:53 {\n    forward . 192.0.2.53 192.0.2.54\n}\n"
	byCoreDNS, _, err := Patch(kubeadmCorefile, Options{Zone: "xcc.test", ClusterSetZone: "clusterset.local", ClusterSetServer: ClusterSetCoreDNS,
		ForwardTo: "10.96.0.53", Service: "xcc-dns/xcc-dns"})
	if err != nil {
		t.Fatal(err)
	}
	zoneOnly := strings.Replace(kubeadmCorefile, "ip6.arpa {", "ip6.arpa clusterset.local {", 1)
	optionOnly := strings.Replace(kubeadmCorefile, "ip6.arpa {", "ip6.arpa {\n        multicluster clusterset.local", 1)
	patchedCache := &Cache{Success: CacheSeconds, MinSuccess: 5, Denial: CacheSeconds, MinDenial: 5}
	for _, tt := range []struct {
		name, corefile, zone string
		want                 *ZoneBlock
	}{
		{"managed", patched, "xcc.test", &ZoneBlock{Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.53"}, Cache: patchedCache}},
		{"managed clusterset zone", patched, "ClusterSet.Local.", &ZoneBlock{Key: "clusterset.local:53", Managed: true, ForwardTo: []string{"10.96.0.53"}, Cache: patchedCache}},
		{"not patched", kubeadmCorefile, "xcc.test", nil},
		{"a parent zone by hand", byHand, "xcc.test", &ZoneBlock{Key: "test:53", ForwardTo: []string{"192.0.2.53", "192.0.2.54"}}},
		{"another zone", patched, "example.com", nil},
		{"the kubernetes plugin's multicluster option", byCoreDNS, "web.shop.svc.clusterset.local", &ZoneBlock{Key: ".:53", Kubernetes: true}},
		{"and xcc.test still forwarded", byCoreDNS, "xcc.test", &ZoneBlock{Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.53"}, Cache: patchedCache}},
		{"the plugin's zone without the option", zoneOnly, "clusterset.local", nil},
		{"the option without the plugin's zone", optionOnly, "clusterset.local", nil},
		{"a kubernetes plugin in a block that does not get the zone", kubeadmCorefile + "other.test:53 {\n    kubernetes clusterset.local {\n        multicluster clusterset.local\n    }\n}\n",
			"clusterset.local", nil},
	} {
		got, err := FindZone(tt.corefile, tt.zone)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if _, err := FindZone("xcc.test {", "xcc.test"); err == nil {
		t.Error("a Corefile that does not parse: no error")
	}
}

// The cache directive of the block that answers the zone: what its
// TTL, success and denial lines set, CoreDNS's defaults otherwise.
func TestFindZoneCache(t *testing.T) {
	for _, tt := range []struct {
		name, block string
		want        *Cache
	}{
		{"none", "forward . 192.0.2.53", nil},
		{"defaults", "cache\n forward . 192.0.2.53", &Cache{Success: 3600, MinSuccess: 5, Denial: 1800, MinDenial: 5}},
		{"one TTL with zones", "cache 30 xcc.test\n forward . 192.0.2.53", &Cache{Success: 30, MinSuccess: 5, Denial: 30, MinDenial: 5}},
		{"sub-block", "cache 300 {\n  success 9984 60 2\n  denial 9984 10\n  serve_stale 2h\n }\n forward . 192.0.2.53",
			&Cache{Success: 60, MinSuccess: 2, Denial: 10, MinDenial: 5, ServeStale: "2h"}},
		{"serve_stale default", "cache {\n  serve_stale\n }", &Cache{Success: 3600, MinSuccess: 5, Denial: 1800, MinDenial: 5, ServeStale: "1h"}},
	} {
		got, err := FindZone(".:53 {\n forward . /etc/resolv.conf\n}\nxcc.test:53 {\n "+tt.block+"\n}\n", "xcc.test")
		if err != nil || got == nil {
			t.Fatalf("%s: %v %v", tt.name, got, err)
		}
		if !reflect.DeepEqual(got.Cache, tt.want) {
			t.Errorf("%s: cache %+v, want %+v", tt.name, got.Cache, tt.want)
		}
	}
	c := Cache{Success: 30, MinSuccess: 5, Denial: 30, MinDenial: 5}
	for _, tt := range []struct {
		ttl      uint32
		negative bool
		want     uint32
	}{{300, false, 30}, {10, false, 10}, {1, false, 5}, {15, true, 15}, {3600, true, 30}, {0, true, 5}} {
		if got := c.Keep(tt.ttl, tt.negative); got != tt.want {
			t.Errorf("Keep(%d, %v) = %d, want %d", tt.ttl, tt.negative, got, tt.want)
		}
	}
}

// A workload cluster's Corefile is read on the operator's machine: one
// that would expand the operator's environment or read its files is
// refused, never parsed into what explain prints.
func TestFindZoneReadsNothingOfThisMachine(t *testing.T) {
	t.Setenv("XCC_TEST_SECRET", "s3cr3t")
	for _, text := range []string{
		"xcc.test:53 {\n    forward . {$XCC_TEST_SECRET}\n}\n",
		"xcc.test:53 {\n    import /etc/*\n}\n",
	} {
		got, err := FindZone(text, "xcc.test")
		if err == nil {
			t.Errorf("%q: %+v, want an error", text, got)
		}
		if got != nil && strings.Contains(strings.Join(got.ForwardTo, " "), "s3cr3t") {
			t.Errorf("the environment was read into %+v", got)
		}
	}
}
