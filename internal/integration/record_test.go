package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	desiredpkg "github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

const (
	cluster = "cluster-a"
	// gateway is cluster-a's gateway name in the walkthrough's GatewayDNS.
	gateway = "gateway.cluster-a.dev-team.clusters.xcc.test."
	// answerWithin bounds how long a changed slice takes to be answered.
	answerWithin = 20 * time.Second
)

// walkthroughGatewayDNS is the walkthrough's GatewayDNS.
func walkthroughGatewayDNS() *v1alpha1.GatewayDNS {
	return testfixture.GatewayDNS("dev-team-gateway-dns")
}

// desiredSlices is the controller's pure desired result (desired.Compute):
// the EndpointSlices gd publishes when every cluster of services is
// selected, reachable and has the gateway Service given (nil: not found)
// with a ready endpoint, with no control-plane host. The slices carry no
// namespace; the controller writes them into its slice namespace.
func desiredSlices(gd *v1alpha1.GatewayDNS, services map[string]*corev1.Service) []*discoveryv1.EndpointSlice {
	var clusters []desiredpkg.Input
	for name, svc := range services {
		clusters = append(clusters, desiredpkg.Input{Name: name, Selected: true, ServiceSynced: true, Service: svc,
			EndpointsSynced: true, ReadyEndpoints: 1})
	}
	return desiredpkg.Compute(gd, dnsworld.Zone, nil, clusters).Slices
}

// desired is what the controller would write into every workload cluster
// for cluster-a's envoy Service with these load-balancer ingress entries.
func desired(t *testing.T, ingress ...string) []*discoveryv1.EndpointSlice {
	t.Helper()
	svc := testfixture.LoadBalancerService("projectcontour", "envoy", ingress...)
	out := desiredSlices(walkthroughGatewayDNS(), map[string]*corev1.Service{cluster: svc})
	if len(out) == 0 {
		t.Fatalf("the controller publishes nothing for ingress %v", ingress)
	}
	for _, s := range out {
		s.Namespace = testfixture.SliceNamespace
	}
	return out
}

// publish makes the slices in the fake API server equal to want, by name,
// as the controller's apply would.
func publish(t *testing.T, w *dnsworld.World, want []*discoveryv1.EndpointSlice) {
	t.Helper()
	ctx := context.Background()
	api := w.Kube.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace)
	have, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wanted := map[string]bool{}
	for _, s := range want {
		wanted[s.Name] = true
		_, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, s, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range have.Items {
		if !wanted[s.Name] {
			if err := api.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// answers asks the world's DNS a name below cluster-a's gateway that no
// cache has seen, and returns the answer as zone-file lines with the name
// asked replaced by NAME.
func answers(t *testing.T, w *dnsworld.World, qtype uint16) (int, []string) {
	t.Helper()
	name := fmt.Sprintf("n%d.%s", time.Now().UnixNano(), gateway)
	r := w.Ask(t, "udp", name, qtype, 0)
	var out []string
	for _, l := range testfixture.Lines(r.Answer) {
		out = append(out, strings.Replace(l, name, "NAME", 1))
	}
	return r.Rcode, out
}

// expect waits until the world answers qtype of a name below cluster-a's
// gateway with rcode and exactly want (zone-file lines of NAME).
func expect(t *testing.T, w *dnsworld.World, qtype uint16, rcode int, want ...string) {
	t.Helper()
	var wantLines []string
	for _, l := range want {
		wantLines = append(wantLines, strings.Replace(l, "NAME", "name.invalid.", 1))
	}
	wantLines = testfixture.ZoneLines(wantLines...)
	for i := range wantLines {
		wantLines[i] = strings.Replace(wantLines[i], "name.invalid.", "NAME", 1)
	}
	deadline := time.Now().Add(answerWithin)
	for {
		gotRcode, got := answers(t, w, qtype)
		if gotRcode == rcode && slices.Equal(got, wantLines) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s %q, want %s %q", dns.TypeToString[qtype], dns.RcodeToString[gotRcode], got, dns.RcodeToString[rcode], wantLines)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLoadBalancerIngressToAnswer follows a record end to end: a
// LoadBalancer Service's status.loadBalancer.ingress, the controller's
// desired EndpointSlices, serve's syncer, a real etcd, and the shipped
// Corefile in an in-process CoreDNS, asked with miekg/dns. A changed
// ingress changes the answer; a Service without ingress takes it away.
func TestLoadBalancerIngressToAnswer(t *testing.T) {
	w := dnsworld.Start(t, dnsworld.Config{
		Corefile: testfixture.ShippedCorefile(t),
		Slices:   desired(t, "192.0.2.10"),
	})
	expect(t, w, dns.TypeA, dns.RcodeSuccess, "NAME 30 IN A 192.0.2.10")
	expect(t, w, dns.TypeAAAA, dns.RcodeSuccess)

	// The load balancer moves to another address and gains an IPv6 one.
	publish(t, w, desired(t, "192.0.2.11", "2001:db8::11"))
	expect(t, w, dns.TypeA, dns.RcodeSuccess, "NAME 30 IN A 192.0.2.11")
	expect(t, w, dns.TypeAAAA, dns.RcodeSuccess, "NAME 30 IN AAAA 2001:db8::11")

	// The Service loses its ingress: the controller publishes no gateway
	// slice, and the name is gone.
	svc := testfixture.LoadBalancerService("projectcontour", "envoy")
	if got := desiredSlices(walkthroughGatewayDNS(), map[string]*corev1.Service{cluster: svc}); len(got) != 0 {
		t.Fatalf("a Service without ingress publishes %d slices, want none", len(got))
	}
	publish(t, w, nil)
	expect(t, w, dns.TypeA, dns.RcodeNameError)
}
