package lab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"
)

// GatewayHost is the name a pod asks for a gateway of cluster: any
// label below gateway.<cluster>.<ns>.clusters.<zone>.
func GatewayHost(app, cluster string) string {
	return fmt.Sprintf("%s.gateway.%s.%s.clusters.%s", app, cluster, ClusterNamespace, Zone)
}

// APIHost is the name of a cluster's API server endpoint.
func APIHost(cluster string) string {
	return fmt.Sprintf("api.%s.%s.clusters.%s", cluster, ClusterNamespace, Zone)
}

// ApplyWalkthrough does the walkthrough's last section on the management
// cluster: label cluster-a and cluster-b hasContour=true and apply its
// GatewayDNS.
func (l *Lab) ApplyWalkthrough(ctx context.Context) error {
	if !l.GatewayDNSCRD {
		return errors.New("the GatewayDNS CRD is not installed")
	}
	for _, c := range []string{ClusterA, ClusterB} {
		if err := LabelCluster(ctx, l.Management, c, SelectorLabel, SelectorValue); err != nil {
			return err
		}
	}
	if _, err := ApplyYAML(ctx, l.Management, GatewayDNSGVR, GatewayDNSYAML); err != nil {
		return err
	}
	l.progress("walkthrough applied: Clusters %s and %s labelled %s=%s, GatewayDNS %s/%s created",
		ClusterA, ClusterB, SelectorLabel, SelectorValue, ClusterNamespace, GatewayDNSName)
	return nil
}

// WaitAnswer asks server for name and qtype until the answer's values of
// type want equal expected (empty: until the rcode is wantRcode with no
// such values), or until timeout. It returns the time it took.
func WaitAnswer(ctx context.Context, server, name string, qtype uint16, wantRcode int, expected []string, timeout time.Duration) (time.Duration, *dns.Msg, error) {
	const interval = 100 * time.Millisecond
	start := time.Now()
	want := slices.Clone(expected)
	slices.Sort(want)
	var last *dns.Msg
	var lastErr error
	for {
		r, err := Query(server, name, qtype)
		if err == nil {
			last = r
			got := Values(r, qtype)
			if r.Rcode == wantRcode && slices.Equal(got, want) {
				return time.Since(start), r, nil
			}
			lastErr = fmt.Errorf("got %s", Summary(r))
		} else {
			lastErr = err
		}
		if time.Since(start) > timeout {
			return time.Since(start), last, fmt.Errorf("%s %s @%s: want %s %v within %s: %w",
				dns.TypeToString[qtype], name, server, dns.RcodeToString[wantRcode], want, timeout, lastErr)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), last, fmt.Errorf("%s %s: %w", dns.TypeToString[qtype], name, ctx.Err())
		case <-time.After(interval):
		}
	}
}
