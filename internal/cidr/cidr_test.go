package cidr

import (
	"net/netip"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want string // List.String(); "!" for an error
	}{
		{"", ""},
		{" , ", ""},
		{"192.0.2.0/24", "192.0.2.0/24"},
		{"192.0.2.0/24, 2001:db8::/32,192.0.2.0/24", "192.0.2.0/24,2001:db8::/32"},
		{"0.0.0.0/0", "0.0.0.0/0"},
		{"192.0.2.7/32", "192.0.2.7/32"},
		{"192.0.2.5/24", "!"},
		{"192.0.2.0", "!"},
		{"192.0.2.0/33", "!"},
		{"::ffff:192.0.2.0/120", "!"},
		{"fe80::/64%eth0", "!"},
		{"example.com/24", "!"},
	}
	for _, tt := range tests {
		l, err := Parse(tt.in)
		switch {
		case tt.want == "!" && err == nil:
			t.Errorf("Parse(%q) = %v, want an error", tt.in, l)
		case tt.want != "!" && err != nil:
			t.Errorf("Parse(%q): %v", tt.in, err)
		case tt.want != "!" && l.String() != tt.want:
			t.Errorf("Parse(%q) = %q, want %q", tt.in, l, tt.want)
		}
	}
}

func TestContains(t *testing.T) {
	l, err := Parse("192.0.2.0/24,2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"192.0.2.0": true, "192.0.2.255": true, "::ffff:192.0.2.9": true, "2001:db8:ffff::1": true,
		"192.0.3.0": false, "10.0.0.1": false, "2001:db9::1": false, "::192.0.2.1": false,
	} {
		if got := l.Contains(netip.MustParseAddr(s)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", s, got, want)
		}
	}
	if List(nil).Contains(netip.MustParseAddr("192.0.2.1")) {
		t.Error("the empty list contains an address")
	}
}

func TestReverseNames(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.5":         "5.0.0.10.in-addr.arpa",
		"::ffff:10.0.0.5":  "5.0.0.10.in-addr.arpa",
		"2001:db8::1":      "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa",
		"2001:db8::abcd:1": "1.0.0.0.d.c.b.a.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa",
	} {
		if got := ReverseName(netip.MustParseAddr(in)); got != want {
			t.Errorf("ReverseName(%s) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"10.0.0.0/24":   "0.0.10.in-addr.arpa",
		"10.0.0.0/25":   "0.0.10.in-addr.arpa",
		"10.0.0.0/23":   "0.10.in-addr.arpa",
		"10.0.0.7/32":   "7.0.0.10.in-addr.arpa",
		"0.0.0.0/0":     "in-addr.arpa",
		"2001:db8::/32": "8.b.d.0.1.0.0.2.ip6.arpa",
		"2001:db8::/34": "8.b.d.0.1.0.0.2.ip6.arpa",
		"2001:db8::/36": "0.8.b.d.0.1.0.0.2.ip6.arpa",
		"::/0":          "ip6.arpa",
	} {
		if got := ReverseZone(netip.MustParsePrefix(in)); got != want {
			t.Errorf("ReverseZone(%s) = %q, want %q", in, got, want)
		}
	}
}
