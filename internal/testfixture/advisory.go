package testfixture

// AdvisoryAddress is an address a member or a workload cluster admin may
// advertise that must never be published or imported, with the word of
// the refusal an operator reads.
type AdvisoryAddress struct {
	Addr, Why string
}

// AdvisoryAddresses are the classes of endpoint address the advisories
// of a peer multi-cluster DNS project found unvalidated (loopback,
// link-local, special ranges, IPv4-mapped IPv6, cloud metadata), one or
// more of each, of both families.
var AdvisoryAddresses = []AdvisoryAddress{
	{"127.0.0.1", "loopback"}, {"127.1.2.3", "loopback"}, {"::1", "loopback"},
	{"::ffff:127.0.0.1", "loopback"},
	{"0.0.0.0", "unspecified"}, {"::", "unspecified"}, {"0.1.2.3", "this network"},
	{"169.254.169.254", "link-local"}, {"169.254.170.2", "link-local"}, {"fe80::1", "link-local"},
	{"fe80::a9fe:a9fe", "link-local"}, {"::ffff:169.254.169.254", "link-local"},
	{"224.0.0.1", "multicast"}, {"239.255.255.250", "multicast"}, {"ff02::1", "multicast"},
	{"255.255.255.255", "broadcast"},
	{"::a9fe:a9fe", "IPv4-compatible"},
	{"fd00:ec2::254", "cloud metadata"}, {"fd20:ce::254", "cloud metadata"}, {"fd00:c1::a9fe:a9fe", "cloud metadata"},
	{"100.100.100.200", "cloud metadata"}, {"168.63.129.16", "cloud metadata"}, {"192.0.0.192", "cloud metadata"},
}
