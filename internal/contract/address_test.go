package contract

import (
	"errors"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

func TestEndpointAddress(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	allowed := cidr.MustParse("10.1.0.0/16,fd00:1::/64")
	tests := []struct {
		t       discoveryv1.AddressType
		in      string
		allowed cidr.List
		want    string // canonical address; "" for an error
		err     error  // the error wrapped, when want is ""
	}{
		{v4, "10.1.0.1", allowed, "10.1.0.1", nil},
		{v4, "::ffff:10.1.0.1", allowed, "10.1.0.1", nil},
		{v6, "FD00:1::0001", allowed, "fd00:1::1", nil},
		{v4, "192.0.2.7", nil, "192.0.2.7", nil},
		{v4, "192.0.2.7", allowed, "", ErrNotAllowed},
		{v4, "::ffff:192.0.2.7", allowed, "", ErrNotAllowed},
		{v6, "fd00:2::1", allowed, "", ErrNotAllowed},
		{v4, "127.0.0.1", allowed, "", skydnsrecord.ErrInvalidAddress},
		{v4, "127.0.0.1", cidr.MustParse("127.0.0.0/8"), "", skydnsrecord.ErrInvalidAddress},
		{v4, "0.0.0.0", nil, "", skydnsrecord.ErrInvalidAddress},
		{v4, "169.254.169.254", nil, "", skydnsrecord.ErrInvalidAddress},
		{v4, "224.0.0.1", nil, "", skydnsrecord.ErrInvalidAddress},
		{v4, "255.255.255.255", nil, "", skydnsrecord.ErrInvalidAddress},
		{v6, "::1", nil, "", skydnsrecord.ErrInvalidAddress},
		{v6, "fe80::1%eth0", nil, "", skydnsrecord.ErrInvalidAddress},
		{v6, "ff02::1", nil, "", skydnsrecord.ErrInvalidAddress},
		{v6, "10.1.0.1", allowed, "", ErrAddressFamily},
		{v4, "fd00:1::1", allowed, "", ErrAddressFamily},
		{discoveryv1.AddressTypeFQDN, "db.example.com", nil, "", nil},
		// Cloud metadata addresses are refused even inside the allowed CIDRs.
		{v6, "fd00:ec2::254", nil, "", skydnsrecord.ErrInvalidAddress},
		{v6, "fd00:ec2::254", cidr.MustParse("fd00::/8"), "", skydnsrecord.ErrInvalidAddress},
		{v6, "fd20:ce::254", nil, "", skydnsrecord.ErrInvalidAddress},
		{v4, "100.100.100.200", cidr.MustParse("100.64.0.0/10"), "", skydnsrecord.ErrInvalidAddress},
		{v4, "168.63.129.16", nil, "", skydnsrecord.ErrInvalidAddress},
		{v4, "0.1.2.3", nil, "", skydnsrecord.ErrInvalidAddress},
		{v6, "::a9fe:a9fe", nil, "", skydnsrecord.ErrInvalidAddress},
	}
	for _, tt := range tests {
		got, err := EndpointAddress(tt.t, tt.in, tt.allowed)
		switch {
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("EndpointAddress(%s, %q, %q) = %q, %v: want %q", tt.t, tt.in, tt.allowed, got, err, tt.want)
		case tt.want == "" && err == nil:
			t.Errorf("EndpointAddress(%s, %q, %q) = %q: want an error", tt.t, tt.in, tt.allowed, got)
		case tt.want == "" && tt.err != nil && !errors.Is(err, tt.err):
			t.Errorf("EndpointAddress(%s, %q, %q): %v: want %v", tt.t, tt.in, tt.allowed, err, tt.err)
		}
	}
}
