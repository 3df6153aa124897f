package skydnsrecord

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateLabel(t *testing.T) {
	tests := []struct {
		label string
		ok    bool
	}{
		{"a", true},
		{"cluster-a", true},
		{"0", true},
		{"a0-b1", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"a.b", false},
		{"Cluster-A", false},
		{"A", false},
		{"-a", false},
		{"a-", false},
		{"-", false},
		{"a_b", false},
		{"*", false},
		{"a b", false},
		{"é", false},
	}
	for _, tt := range tests {
		err := ValidateLabel(tt.label)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateLabel(%q) = %v, want ok=%v", tt.label, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateLabel(%q) = %v, does not wrap ErrInvalidName", tt.label, err)
		}
	}
}

func TestValidateName(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	// 63*3 + 61 + 3 dots = 253 octets.
	name253 := label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 61)
	if len(name253) != 253 {
		t.Fatalf("name253 is %d octets", len(name253))
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"xcc.test", true},
		{"gateway.cluster-a.dev-team.clusters.xcc.test", true},
		{"test", true},
		{name253, true},
		{name253 + "b", false},
		{label63 + ".xcc.test", true},
		{label63 + "a.xcc.test", false},
		{"", false},
		{".", false},
		{"xcc.test.", false},
		{".xcc.test", false},
		{"a..b", false},
		{"gateway.Cluster-A.dev-team.clusters.xcc.test", false},
		{"-a.xcc.test", false},
		{"a-.xcc.test", false},
		{"*.xcc.test", false},
		{"a_b.xcc.test", false},
	}
	for _, tt := range tests {
		err := ValidateName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, does not wrap ErrInvalidName", tt.name, err)
		}
	}
}

// A cluster named "a.b" must not become two labels of another name: the
// name built from it is checked label by label by the caller, and the
// label itself is refused.
func TestClusterNameWithDotIsRefused(t *testing.T) {
	if err := ValidateLabel("a.b"); err == nil {
		t.Fatal(`ValidateLabel("a.b") accepted a label with a dot`)
	}
}

func TestParseHostname(t *testing.T) {
	tests := []struct {
		hostname, zone string
		name           string
		wildcard       bool
		ok             bool
	}{
		{"*.gateway.cluster-a.dev-team.clusters.xcc.test", "xcc.test", "gateway.cluster-a.dev-team.clusters.xcc.test", true, true},
		{"gateway.cluster-a.dev-team.clusters.xcc.test", "xcc.test", "gateway.cluster-a.dev-team.clusters.xcc.test", false, true},
		{"*.gateway.cluster-a.dev-team.clusters.xcc.test.", "xcc.test", "gateway.cluster-a.dev-team.clusters.xcc.test", true, true},
		{"*.Gateway.Cluster-A.dev-team.clusters.XCC.test", "xcc.test", "gateway.cluster-a.dev-team.clusters.xcc.test", true, true},
		{"a.xcc.test", "XCC.test.", "a.xcc.test", false, true},
		{"a.xcc.test", "xcc.test", "a.xcc.test", false, true},
		// Apex, outside the zone, suffix without a label boundary.
		{"xcc.test", "xcc.test", "", false, false},
		{"*.xcc.test", "xcc.test", "", false, false},
		{"xcc.test.", "xcc.test", "", false, false},
		{"example.com", "xcc.test", "", false, false},
		{"*.example.com", "xcc.test", "", false, false},
		{"a.notxcc.test", "xcc.test", "", false, false},
		{"test", "xcc.test", "", false, false},
		// Wildcards only as the whole first label.
		{"*", "xcc.test", "", false, false},
		{"a.*.xcc.test", "xcc.test", "", false, false},
		{"*.*.a.xcc.test", "xcc.test", "", false, false},
		{"*a.xcc.test", "xcc.test", "", false, false},
		{"", "xcc.test", "", false, false},
		{"a..xcc.test", "xcc.test", "", false, false},
		{"a_b.xcc.test", "xcc.test", "", false, false},
	}
	for _, tt := range tests {
		name, wildcard, err := ParseHostname(tt.hostname, tt.zone)
		if (err == nil) != tt.ok {
			t.Errorf("ParseHostname(%q, %q) error = %v, want ok=%v", tt.hostname, tt.zone, err, tt.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidName) {
				t.Errorf("ParseHostname(%q) = %v, does not wrap ErrInvalidName", tt.hostname, err)
			}
			if name != "" || wildcard {
				t.Errorf("ParseHostname(%q) returned %q, %v with an error", tt.hostname, name, wildcard)
			}
			continue
		}
		if name != tt.name || wildcard != tt.wildcard {
			t.Errorf("ParseHostname(%q, %q) = %q, %v; want %q, %v", tt.hostname, tt.zone, name, wildcard, tt.name, tt.wildcard)
		}
	}
}

func TestKeyName(t *testing.T) {
	tests := []struct{ name, key string }{
		{"xcc.test", "/skydns/test/xcc"},
		{"test", "/skydns/test"},
		{"gateway.cluster-a.dev-team.clusters.xcc.test", "/skydns/test/xcc/clusters/dev-team/cluster-a/gateway"},
		{"a.b.xcc.test", "/skydns/test/xcc/b/a"},
	}
	for _, tt := range tests {
		if got := Key(tt.name); got != tt.key {
			t.Errorf("Key(%q) = %q, want %q", tt.name, got, tt.key)
		}
		// Key canonicalises: a trailing dot and upper case give the same key.
		if got := Key(strings.ToUpper(tt.name) + "."); got != tt.key {
			t.Errorf("Key(%q) = %q, want %q", strings.ToUpper(tt.name)+".", got, tt.key)
		}
		got, err := Name(tt.key)
		if err != nil || got != tt.name {
			t.Errorf("Name(%q) = %q, %v; want %q", tt.key, got, err, tt.name)
		}
	}
}

func TestNameRefusesBadKeys(t *testing.T) {
	for _, key := range []string{"", "/", "/skydns", "/skydns/", "skydns/test", "/other/test", "/skydns/test//xcc", "/skydns/test/xcc/", "/skydnsx/test"} {
		if name, err := Name(key); err == nil {
			t.Errorf("Name(%q) = %q, want an error", key, name)
		}
	}
}

func TestNameOfRecordKey(t *testing.T) {
	leaf := Leaf("EndpointSlice xcc-dns/gw", "192.0.2.1")
	key := RecordKey("gateway.c.ns.clusters.xcc.test", "EndpointSlice xcc-dns/gw", "192.0.2.1")
	got, err := Name(key)
	if want := leaf + ".gateway.c.ns.clusters.xcc.test"; err != nil || got != want {
		t.Errorf("Name(%q) = %q, %v; want %q", key, got, err, want)
	}
}

func TestParentKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/skydns/test/xcc/a/x0123", "/skydns/test/xcc/a"},
		{"/skydns/test", "/skydns"},
		{"noslash", "noslash"},
		{"/", ""},
	}
	for _, tt := range tests {
		if got := ParentKey(tt.in); got != tt.want {
			t.Errorf("ParentKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	name := "gateway.c.ns.clusters.xcc.test"
	if got, want := ParentKey(RecordKey(name, "o", "192.0.2.1")), Key(name); got != want {
		t.Errorf("ParentKey(RecordKey(%q)) = %q, want %q", name, got, want)
	}
}

func TestIsSubdomain(t *testing.T) {
	tests := []struct {
		name, domain string
		want         bool
	}{
		{"xcc.test", "xcc.test", true},
		{"a.xcc.test", "xcc.test", true},
		{"axcc.test", "xcc.test", false},
		{"test", "xcc.test", false},
	}
	for _, tt := range tests {
		if got := IsSubdomain(tt.name, tt.domain); got != tt.want {
			t.Errorf("IsSubdomain(%q, %q) = %v, want %v", tt.name, tt.domain, got, tt.want)
		}
	}
}

func FuzzKeyName(f *testing.F) {
	for _, s := range []string{"xcc.test", "gateway.cluster-a.dev-team.clusters.xcc.test", "a", "a..b", "A.B.", "/skydns/x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		key := Key(name) // never panics, whatever the input
		if !strings.HasPrefix(key, Prefix+"/") {
			t.Fatalf("Key(%q) = %q, not below %s/", name, key, Prefix)
		}
		if ValidateName(name) != nil {
			return
		}
		got, err := Name(key)
		if err != nil || got != name {
			t.Fatalf("Name(Key(%q)) = %q, %v; key %q", name, got, err, key)
		}
		if ParentKey(key+"/"+Leaf("o", "h")) != key {
			t.Fatalf("ParentKey of a record key below %q is not %q", name, key)
		}
	})
}

func FuzzParseHostname(f *testing.F) {
	for _, s := range []string{"*.gateway.cluster-a.dev-team.clusters.xcc.test", "xcc.test", "*.xcc.test", "a.xcc.test.", "A.XCC.TEST", "example.com", "*.*.xcc.test", "axcc.test"} {
		f.Add(s, "xcc.test")
	}
	f.Add("a.example.com", "example.com")
	f.Fuzz(func(t *testing.T, hostname, zone string) {
		name, wildcard, err := ParseHostname(hostname, zone)
		if err != nil {
			if name != "" || wildcard {
				t.Fatalf("ParseHostname(%q, %q) = %q, %v with error %v", hostname, zone, name, wildcard, err)
			}
			return
		}
		d := CanonicalName(zone)
		if name == d || !strings.HasSuffix(name, "."+d) {
			t.Fatalf("ParseHostname(%q, %q) = %q, not strictly below the zone", hostname, zone, name)
		}
		if err := ValidateName(name); err != nil {
			t.Fatalf("ParseHostname(%q, %q) = %q, which is invalid: %v", hostname, zone, name, err)
		}
		if strings.Contains(name, "*") {
			t.Fatalf("ParseHostname(%q, %q) = %q keeps a wildcard", hostname, zone, name)
		}
	})
}
