package main

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/serve"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

const (
	zone      = skydnsrecord.DefaultDomain
	namespace = "dev-team"
	// service is the first label of every query: any name below a gateway
	// is answered from that gateway's records.
	service = "kuard"
	// seed makes the query order the same in every run.
	seed = 2026
)

// dataset is one size's names: the gateways that exist and the query list.
type dataset struct {
	names   int
	hits    []string // query names that exist, one per gateway
	misses  []string // query names below gateways that do not exist
	address []string // hits[i]'s address
}

func newDataset(names int, nxShare float64) dataset {
	d := dataset{names: names}
	for i := range names {
		d.hits = append(d.hits, gatewayQuery(fmt.Sprintf("c%d", i)))
		d.address = append(d.address, addressOf(i))
	}
	// misses/(hits+misses) = nxShare, at least one.
	nx := max(1, int(float64(names)*nxShare/(1-nxShare)+0.5))
	for i := range nx {
		d.misses = append(d.misses, gatewayQuery(fmt.Sprintf("nosuch%d", i)))
	}
	return d
}

func gatewayQuery(cluster string) string {
	return fmt.Sprintf("%s.gateway.%s.%s.clusters.%s.", service, cluster, namespace, zone)
}

// gatewayName is the name serve keeps the gateway's records at: the
// wildcard's parent.
func gatewayName(i int) string {
	return fmt.Sprintf("gateway.c%d.%s.clusters.%s", i, namespace, zone)
}

// addressOf gives gateway i a distinct address in 10.0.0.0/8.
func addressOf(i int) string {
	a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
	return a.String()
}

// records returns what serve writes for the dataset's gateways: one
// EndpointSlice per gateway, made into records by serve's own code.
func (d dataset) records() (skydnsrecord.Set, error) {
	leaves := skydnsrecord.Set{}
	for i := range d.names {
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   serve.DefaultNamespace,
				Name:        fmt.Sprintf("c%d-gateway-ipv4", i),
				Annotations: map[string]string{contract.AnnotationHostname: "*." + gatewayName(i), contract.AnnotationGatewayRef: "dev-team/gw"},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{d.address[i]}}},
		}
		set, problems := serve.SliceRecords(slice, zone)
		if len(problems) != 0 {
			return nil, fmt.Errorf("slice %s: %v", slice.Name, problems)
		}
		for k, r := range set {
			leaves[k] = r
		}
	}
	return serve.WithNameRecords(leaves), nil
}

// zoneFile is the baseline's equivalent zone: the apex and one stock
// wildcard record per gateway, with the same TTLs and SOA.
func (d dataset) zoneFile() string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN %s.\n", zone)
	fmt.Fprintf(&b, "@ 30 IN SOA ns.dns.%s. hostmaster.%s. 1 7200 1800 86400 5\n", zone, zone)
	fmt.Fprintf(&b, "@ 30 IN NS ns.dns.%s.\n", zone)
	for i := range d.names {
		fmt.Fprintf(&b, "*.%s. %d IN A %s\n", gatewayName(i), skydnsrecord.DefaultTTL, d.address[i])
	}
	return b.String()
}

// queryFile is dnsperf's input: every hit and miss once, A queries, in a
// fixed shuffled order. dnsperf goes round it for the whole run.
func (d dataset) queryFile() string {
	all := append(append([]string{}, d.hits...), d.misses...)
	r := rand.New(rand.NewPCG(seed, uint64(d.names)))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var b strings.Builder
	for _, n := range all {
		fmt.Fprintf(&b, "%s A\n", n)
	}
	return b.String()
}

func writeFile(path, text string) error {
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
