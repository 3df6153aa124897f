package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// Settings of testMCSFlappingMember.
const (
	// flapSlices are the flapping Service's EndpointSlices, each with
	// one endpoint changed by a writer of its own: one writer alone made
	// 25 changes a second on the lab's 2 cores, waiting for each answer.
	flapSlices = 4
	// flapInterval spaces the changes of each writer: 100 a second in
	// all, as far as the lab's API server takes them.
	flapInterval = flapSlices * 10 * time.Millisecond
	// flapWindow is how long the writes into cluster-b are counted.
	flapWindow = 15 * time.Second
	// memberSyncsPerSecond is the controller's --member-syncs-per-second
	// here: the syncs one member's events cause a second, as many at
	// once. Below its default (5): the lab's syncs reach about 3 a second
	// on their own (each writes into every member and waits for the
	// writes), so only a lower limit shows in the writes it bounds.
	memberSyncsPerSecond = 1
	// writesPerSync bounds the writes one sync of a flapping endpoint
	// makes into another member: the update of the import's slice there,
	// and one to spare.
	writesPerSync = 2
	// flapPort is the flapping Service's port.
	flapPort = 8080
)

// testMCSFlappingMember: the troubled set's third member (cluster-p)
// exports a Service whose endpoints change address without pause, aimed
// at 100 changes a second (4 writers; as many as the lab's API server
// takes). The controller runs with --member-syncs-per-second=1. With
// every member healthy first, then while it flaps, a new export of
// cluster-a reaches cluster-b, and an unexport leaves it, within twice
// the healthy time (and the slack); meanwhile the controller's writes
// into cluster-b, as cluster-b's API server counts them, stay within
// what the limit allows (2 writes a sync), not one per change.
func testMCSFlappingMember(t *testing.T) {
	withController(t, fmt.Sprintf("--member-syncs-per-second=%d", memberSyncsPerSecond))
	s := newTroubledSet(t, "flapping", "flapping", "xcc-flapping-test", "cluster-p")
	flap := lab.ExportedService{Namespace: s.ns, Name: "flap",
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(flapPort)}},
		Pods:  []lab.HeadlessPod{{Address: "198.51.100.170", Ready: true}}}
	if err := lab.CreateExportedService(s.ctx, s.m, flap); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.DeleteExportedService(ctx, s.m, s.ns, flap.Name); err != nil {
			t.Error(err)
		}
	})
	waitImport(t, s.b, s.ns, flap.Name, func(i *lab.Import) bool { return len(i.IPs) > 0 })
	healthyIn, healthyOut := s.healthy()

	names, err := addSlices(s.ctx, s.m, s.ns, flap.Name+"-lab", flapSlices-1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(s.ctx)
	var changes atomic.Int64
	done := make(chan error, len(names))
	for _, name := range names {
		go func() { done <- flapEndpoint(ctx, s.m, s.ns, name, &changes) }()
	}
	defer func() {
		stop()
		for range names {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}()
	s.troubled("flapping its endpoints", healthyIn, healthyOut, func() {
		s.gatewayDNSResolves()
		changes0 := changes.Load()
		writes0, err := controllerWrites(s.ctx, s.b)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		time.Sleep(flapWindow)
		writes, err := controllerWrites(s.ctx, s.b)
		if err != nil {
			t.Fatal(err)
		}
		secs := time.Since(began).Seconds()
		changeRate, writeRate := float64(changes.Load()-changes0)/secs, (writes-writes0)/secs
		bound := (memberSyncsPerSecond*secs + memberSyncsPerSecond) * writesPerSync / secs
		t.Logf("%s flapped %.0f times a second; writes into cluster-b: %.1f a second (bound %.1f)", s.m.Name, changeRate, writeRate, bound)
		if writeRate > bound {
			t.Errorf("while %s flapped %.0f times a second, the controller wrote %.1f times a second into cluster-b, want at most %.1f",
				s.m.Name, changeRate, writeRate, bound)
		}
		if changeRate < 2*bound {
			t.Errorf("%s flapped only %.0f times a second: too few to show the bound of %.1f writes a second", s.m.Name, changeRate, bound)
		}
	})
}

// addSlices copies the EndpointSlice name in w n times (name-1, ...),
// each endpoint of its own, and returns name and the copies' names.
func addSlices(ctx context.Context, w *lab.Cluster, ns, name string, n int) ([]string, error) {
	slices := w.Client.DiscoveryV1().EndpointSlices(ns)
	orig, err := slices.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get EndpointSlice %s/%s in %s: %w", ns, name, w.Name, err)
	}
	names := []string{name}
	for i := 1; i <= n; i++ {
		c := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: ns, Labels: orig.Labels},
			AddressType: orig.AddressType, Ports: orig.Ports,
			Endpoints: []discoveryv1.Endpoint{flapEndpointAt(fmt.Sprintf("198.51.100.%d", 180+i))}}
		if _, err := slices.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create EndpointSlice %s/%s in %s: %w", ns, c.Name, w.Name, err)
		}
		names = append(names, c.Name)
	}
	return names, nil
}

// flapEndpointAt is a ready endpoint at addr.
func flapEndpointAt(addr string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}
}

// flapEndpoint changes the address of the endpoint of the EndpointSlice
// name in w every flapInterval, between two addresses, until ctx ends,
// counting the changes. Its client has no rate limit of its own.
func flapEndpoint(ctx context.Context, w *lab.Cluster, ns, name string, changes *atomic.Int64) error {
	cfg := *w.Config
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return fmt.Errorf("client of %s: %w", w.Name, err)
	}
	slices := client.DiscoveryV1().EndpointSlices(ns)
	slice, err := slices.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get EndpointSlice %s/%s in %s: %w", ns, name, w.Name, err)
	}
	// Its endpoint moves to another address and back.
	addrs := [2]string{"198.51.100.171", slice.Endpoints[0].Addresses[0]}
	tick := time.NewTicker(flapInterval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		slice.Endpoints = []discoveryv1.Endpoint{flapEndpointAt(addrs[i%2])}
		next, err := slices.Update(ctx, slice, metav1.UpdateOptions{})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("flap EndpointSlice %s/%s in %s: %w", ns, name, w.Name, err)
		}
		slice = next
		changes.Add(1)
	}
}

// controllerWrites is how many creates, updates, patches and deletes of
// the kinds the controller writes into a member (ServiceImports,
// Services, EndpointSlices) w's API server has served, from its own
// metrics: in the lab nothing else writes them while a test waits.
func controllerWrites(ctx context.Context, w *lab.Cluster) (float64, error) {
	body, err := w.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("metrics of %s: %w", w.Name, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("metrics of %s: %w", w.Name, err)
	}
	mf := families["apiserver_request_total"]
	if mf == nil {
		return 0, fmt.Errorf("metrics of %s: no apiserver_request_total", w.Name)
	}
	writes := map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true}
	kinds := map[string]bool{"serviceimports": true, "services": true, "endpointslices": true}
	sum := 0.0
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if writes[labels["verb"]] && kinds[labels["resource"]] {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum, nil
}
