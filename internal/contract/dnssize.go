package contract

import "strings"

// The size of the SRV answer of a headless name across clusters.
//
// CoreDNS cuts every answer to what one DNS message holds
// (dns.Msg.Truncate): over TCP MaxMessageSize. An answer that fits
// uncompressed is sent so; a larger one is compressed first, and what
// still does not fit is dropped, the additional section first, with TC
// set. So an SRV answer whose compressed size is at most MaxMessageSize
// is sent whole. Compressed, as miekg/dns packs it (dnssize_test.go
// checks these against dns.Msg.Len):
//
//   - the owner of each SRV record is the question's name: a 2-byte
//     pointer;
//   - an SRV target is never compressed (RFC 2782), so each costs its
//     whole length: at 1,000 pods it is most of the answer;
//   - the etcd plugin adds to the additional section the address records
//     of every target inside its zone. Their owner is the target; at
//     worst it is packed as its labels below the headless name x followed
//     by a pointer to x, which the question holds near the message's start.
//
// The records of the name x itself (A or AAAA, owner x) are 16 or 28
// bytes compressed: MaxRecordsPerName of them always fit, so only the SRV
// names need this budget.

// MaxMessageSize is the most one DNS message holds: over TCP its length is
// 16 bits.
const MaxMessageSize = 65535

const (
	// headerSize is the fixed header of a DNS message.
	headerSize = 12
	// messageReserve is kept free for an OPT record and the EDNS options
	// a server may add to an answer (cookie, NSID, padding).
	messageReserve = 512
	// rrFixed is the type, class, TTL and data length of a record.
	rrFixed = 10
	// srvFixed is the priority, weight and port of an SRV record.
	srvFixed = 6
)

// SRVAnswerBudget is what an SRV answer at srvName has for its records and
// their targets' addresses (SRVTargetSize) in one DNS message: the message
// less its header, question and a reserve for EDNS.
func SRVAnswerBudget(srvName string) int {
	return MaxMessageSize - headerSize - (nameWireLength(srvName) + 4) - messageReserve
}

// SRVTargetSize is the most one SRV record with target, a name below the
// headless name x, takes in a compressed answer, with the target's ipv4
// A and ipv6 AAAA records in the additional section. (The etcd plugin of
// CoreDNS 1.15 adds only the A records; the AAAA are counted so that a
// version that adds both still fits.)
func SRVTargetSize(x, target string, ipv4, ipv6 int) int {
	srv := 2 + rrFixed + srvFixed + nameWireLength(target)
	owner := nameWireLength(target)
	if below, ok := strings.CutSuffix(canonical(target), "."+canonical(x)); ok && x != "" {
		owner = len(below) + 1 + 2
	}
	return srv + ipv4*(owner+rrFixed+4) + ipv6*(owner+rrFixed+16)
}

// nameWireLength is the length of name uncompressed on the wire: a length
// octet per label, the labels, and the root's empty label.
func nameWireLength(name string) int {
	name = canonical(name)
	if name == "" {
		return 1
	}
	return len(name) + 2
}

func canonical(name string) string { return strings.TrimSuffix(name, ".") }
