package corefile

import (
	"reflect"
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
	for _, tt := range []struct {
		name, corefile, zone string
		want                 *ZoneBlock
	}{
		{"managed", patched, "xcc.test", &ZoneBlock{Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.53"}}},
		{"managed clusterset zone", patched, "ClusterSet.Local.", &ZoneBlock{Key: "clusterset.local:53", Managed: true, ForwardTo: []string{"10.96.0.53"}}},
		{"not patched", kubeadmCorefile, "xcc.test", nil},
		{"a parent zone by hand", byHand, "xcc.test", &ZoneBlock{Key: "test:53", ForwardTo: []string{"192.0.2.53", "192.0.2.54"}}},
		{"another zone", patched, "example.com", nil},
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
