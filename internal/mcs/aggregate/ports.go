package aggregate

import (
	"cmp"
	"slices"
)

// comparePorts orders ports by name, then protocol, port and
// appProtocol: the order of an import's ports, and the order an export's
// ports are merged in, so that the order of a Service's list never
// matters.
func comparePorts(a, b Port) int {
	return cmp.Or(
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Protocol, b.Protocol),
		cmp.Compare(a.Port, b.Port),
		cmp.Compare(a.AppProtocol, b.AppProtocol),
	)
}

type protocolPort struct {
	protocol string
	port     int32
}

// mergePorts merges the ports of the valid exports, precedence first, as
// the KEP says: first by name, then by protocol and port, so the import
// has no two ports of one name and no two of one protocol and port. A
// port that clashes with one kept already (same name, other number,
// protocol or appProtocol; or same protocol and number, other name) is
// dropped, and its export's index is in lost. Ports no export with
// precedence declares are added: the union.
func mergePorts(valid []Export) ([]Port, map[int]bool) {
	byName := map[string]Port{}
	byNumber := map[protocolPort]bool{}
	lost := map[int]bool{}
	var merged []Port
	for i, e := range valid {
		for _, p := range slices.SortedFunc(slices.Values(e.Service.Ports), comparePorts) {
			if have, ok := byName[p.Name]; ok {
				if have != p {
					lost[i] = true
				}
				continue
			}
			n := protocolPort{p.Protocol, p.Port}
			if byNumber[n] {
				lost[i] = true
				continue
			}
			byName[p.Name] = p
			byNumber[n] = true
			merged = append(merged, p)
		}
	}
	slices.SortFunc(merged, comparePorts)
	return merged, lost
}
