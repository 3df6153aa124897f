package skydnsrecord

import (
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestLeafDeterministic(t *testing.T) {
	a := Leaf("EndpointSlice xcc-dns/gw-a-ipv4", "192.0.2.1")
	if b := Leaf("EndpointSlice xcc-dns/gw-a-ipv4", "192.0.2.1"); a != b {
		t.Fatalf("Leaf differs for the same input: %q, %q", a, b)
	}
	if len(a) != 1+2*leafHashBytes || !strings.HasPrefix(a, leafPrefix) {
		t.Errorf("Leaf %q: want %q and %d hex digits", a, leafPrefix, 2*leafHashBytes)
	}
	others := []string{
		Leaf("EndpointSlice xcc-dns/gw-a-ipv4", "192.0.2.2"),
		Leaf("EndpointSlice xcc-dns/gw-b-ipv4", "192.0.2.1"),
		// The separator keeps owner and host apart.
		Leaf("EndpointSlice xcc-dns/gw-a-ipv", "4192.0.2.1"),
	}
	for _, o := range others {
		if o == a {
			t.Errorf("different inputs give the same leaf %q", a)
		}
	}
}

func TestRecordKey(t *testing.T) {
	got := RecordKey("gateway.c.ns.clusters.xcc.test", "o", "192.0.2.1")
	want := "/skydns/test/xcc/clusters/ns/c/gateway/" + Leaf("o", "192.0.2.1")
	if got != want {
		t.Errorf("RecordKey = %q, want %q", got, want)
	}
}

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" when refused
	}{
		{"192.0.2.1", "192.0.2.1"},
		{"2001:db8::1", "2001:db8::1"},
		{"10.0.0.1", "10.0.0.1"},
		{"::ffff:192.0.2.1", "192.0.2.1"},
		{"127.0.0.1", ""},
		{"127.1.2.3", ""},
		{"::1", ""},
		{"::ffff:127.0.0.1", ""},
		{"169.254.1.1", ""},
		{"169.254.169.254", ""},
		{"fe80::1", ""},
		{"fe80::1%eth0", ""},
		{"2001:db8::1%eth0", ""},
		{"0.0.0.0", ""},
		{"::", ""},
		{"224.0.0.1", ""},
		{"239.1.1.1", ""},
		{"ff02::1", ""},
		{"ff05::2", ""},
		{"255.255.255.255", ""},
		{"", ""},
		{"not-an-ip", ""},
		{"192.0.2.1/32", ""},
		{"192.0.2.256", ""},
		{" 192.0.2.1", ""},
		// "This network": no packet may be sent to it (RFC 1122).
		{"0.1.2.3", ""},
		{"0.255.255.254", ""},
		// IPv4-compatible IPv6 (deprecated, RFC 4291): never routed as such.
		{"::7f00:1", ""},
		{"::a9fe:a9fe", ""},
		// Cloud metadata addresses outside link-local (MetadataAddresses).
		{"fd00:ec2::254", ""},
		{"FD00:EC2:0::254", ""},
		{"fd00:ec2::23", ""},
		{"fd20:ce::254", ""},
		{"fd00:c1::a9fe:a9fe", ""},
		{"100.100.100.200", ""},
		{"::ffff:100.100.100.200", ""},
		{"168.63.129.16", ""},
		{"192.0.0.192", ""},
		// Their neighbours are ordinary addresses.
		{"fd00:ec3::254", "fd00:ec3::254"},
		{"fd20:ce::253", "fd20:ce::253"},
		{"100.100.100.201", "100.100.100.201"},
		{"100.64.0.1", "100.64.0.1"},
		{"1.0.0.1", "1.0.0.1"},
	}
	for _, tt := range tests {
		ip, err := ParseAddress(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseAddress(%q) = %v, want refused", tt.in, ip)
			} else if !errors.Is(err, ErrInvalidAddress) {
				t.Errorf("ParseAddress(%q) = %v, does not wrap ErrInvalidAddress", tt.in, err)
			}
			continue
		}
		if err != nil || ip.String() != tt.want {
			t.Errorf("ParseAddress(%q) = %v, %v; want %s", tt.in, ip, err, tt.want)
		}
	}
}

// TestMetadataAddressesRefused: every address of the list is refused by
// ParseAddress, of either family and in any spelling, and the error says
// why in words an operator reads in a status.
func TestMetadataAddressesRefused(t *testing.T) {
	for _, p := range MetadataAddresses {
		pfx := netip.MustParsePrefix(p)
		for _, a := range []netip.Addr{pfx.Addr(), lastOf(pfx)} {
			spellings := []string{a.String(), a.StringExpanded()}
			if a.Is4() {
				spellings = append(spellings, "::ffff:"+a.String())
			}
			for _, s := range spellings {
				_, err := ParseAddress(s)
				if err == nil || !errors.Is(err, ErrInvalidAddress) || !strings.Contains(err.Error(), "cloud metadata") {
					t.Errorf("ParseAddress(%q) = %v: want refused as a cloud metadata address", s, err)
				}
			}
		}
		if !IsMetadataAddress(pfx.Addr()) {
			t.Errorf("IsMetadataAddress(%s) = false", pfx.Addr())
		}
	}
}

// lastOf is the last address of p.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestParseTarget(t *testing.T) {
	tests := []struct{ in, want string }{
		{"lb.example.com", "lb.example.com"},
		{"LB.Example.COM.", "lb.example.com"},
		{"a1b2.elb.us-east-1.amazonaws.com", "a1b2.elb.us-east-1.amazonaws.com"},
		{"192.0.2.1", ""},
		{"", ""},
		{"*.example.com", ""},
		{"a..example.com", ""},
		{"-a.example.com", ""},
		{"2001:db8::1", ""},
		{strings.Repeat("a", 64) + ".example.com", ""},
		{"localhost", ""},
		{"LocalHost.", ""},
		{"db.localhost", ""},
		{"gateway", ""},
		{"10.0.0.300", ""},
		{"localhost.example.com", "localhost.example.com"},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseTarget(%q) = %q, want refused", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTarget(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestRecordMarshalAlwaysWritesTTL(t *testing.T) {
	for _, r := range []Record{{}, {Host: "192.0.2.1"}, {Host: "192.0.2.1", TTL: 30, Owner: "o"}} {
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["ttl"]; !ok {
			t.Errorf("Marshal(%+v) = %s, has no ttl", r, b)
		}
		back, err := Unmarshal(b)
		if err != nil || back != r {
			t.Errorf("Unmarshal(Marshal(%+v)) = %+v, %v", r, back, err)
		}
	}
	b, _ := Record{Host: "192.0.2.1", TTL: 30, Owner: "o"}.Marshal()
	if want := `{"host":"192.0.2.1","ttl":30,"owner":"o"}`; string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	if _, err := Unmarshal([]byte("{")); err == nil {
		t.Error("Unmarshal of broken JSON succeeded")
	}
}

func TestDiff(t *testing.T) {
	rec := func(host, owner string) Record { return Record{Host: host, TTL: 30, Owner: owner} }
	tests := []struct {
		name             string
		desired, current Set
		puts             []string
		deletes          []string
	}{
		{name: "empty"},
		{
			name:    "unchanged",
			desired: Set{"/k/a": rec("1", "o"), "/k/b": rec("2", "o")},
			current: Set{"/k/a": rec("1", "o"), "/k/b": rec("2", "o")},
		},
		{
			name:    "missing",
			desired: Set{"/k/c": rec("3", "o"), "/k/a": rec("1", "o"), "/k/b": rec("2", "o")},
			current: Set{"/k/a": rec("1", "o")},
			puts:    []string{"/k/b", "/k/c"},
		},
		{
			name:    "changed",
			desired: Set{"/k/a": rec("1", "o"), "/k/b": {Host: "2", TTL: 60, Owner: "o"}},
			current: Set{"/k/a": rec("9", "o"), "/k/b": rec("2", "o")},
			puts:    []string{"/k/a", "/k/b"},
		},
		{
			name:    "stale owned deleted, sorted",
			desired: Set{"/k/a": rec("1", "o")},
			current: Set{"/k/a": rec("1", "o"), "/k/z": rec("2", "o"), "/k/m": rec("3", "p"), "/k/b": rec("3", "o")},
			deletes: []string{"/k/b", "/k/m", "/k/z"},
		},
		{
			name:    "unowned never deleted",
			desired: Set{},
			current: Set{"/k/hand": rec("1", ""), "/k/ours": rec("2", "o")},
			deletes: []string{"/k/ours"},
		},
		{
			name:    "unowned at a desired key is overwritten, not deleted",
			desired: Set{"/k/a": rec("1", "o")},
			current: Set{"/k/a": rec("1", "")},
			puts:    []string{"/k/a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Diff(tt.desired, tt.current)
			var puts []string
			for _, put := range p.Puts {
				puts = append(puts, put.Key)
				if put.Record != tt.desired[put.Key] {
					t.Errorf("put %q = %+v, want %+v", put.Key, put.Record, tt.desired[put.Key])
				}
			}
			if !slices.Equal(puts, tt.puts) {
				t.Errorf("puts = %q, want %q", puts, tt.puts)
			}
			if !slices.Equal(p.Deletes, tt.deletes) {
				t.Errorf("deletes = %q, want %q", p.Deletes, tt.deletes)
			}
			if p.Empty() != (len(tt.puts) == 0 && len(tt.deletes) == 0) {
				t.Errorf("Empty() = %v", p.Empty())
			}
			for _, d := range p.Deletes {
				if !tt.current[d].Owned() {
					t.Errorf("deletes unowned %q", d)
				}
			}
		})
	}
}

func TestSetKeys(t *testing.T) {
	s := Set{"/b": {}, "/a": {}, "/c": {}}
	if got := s.Keys(); !slices.Equal(got, []string{"/a", "/b", "/c"}) {
		t.Errorf("Keys = %q", got)
	}
}

// A hostname one label below a name can never be stored at the key of one
// of that name's records, whatever its first label: leaves are not labels.
func TestLeafIsNeverANameKey(t *testing.T) {
	leaf := Leaf("EndpointSlice xcc-dns/victim", "192.0.2.1")
	victim := RecordKey("gateway.b.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/victim", "192.0.2.1")
	if err := ValidateLabel(leaf); err == nil {
		t.Fatalf("leaf %q is a valid label", leaf)
	}
	if _, _, err := ParseHostname(leaf+".gateway.b.dev-team.clusters.xcc.test", "xcc.test"); err == nil {
		t.Errorf("hostname with the leaf %q as its first label accepted: its key would be %q", leaf, victim)
	}
}
