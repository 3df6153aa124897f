package clusterset

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/printable"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// The tests named TestAdvisory* hold this project to the classes of the
// advisories published against a peer multi-cluster DNS project: a
// compromised member injecting objects into other members' namespaces,
// and endpoint addresses published unvalidated.

// add puts objs into m's clientsets (Kubernetes, else MCS) before a test
// starts its controller.
func add(t *testing.T, m testfixture.Member, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		tracker := m.Tracker()
		if _, ok := o.(*mcsv1beta1.ServiceExport); ok {
			tracker = m.MCS.Tracker()
		} else if _, ok := o.(*mcsv1beta1.ServiceImport); ok {
			tracker = m.MCS.Tracker()
		}
		if err := tracker.Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// exported is a ClusterIP Service namespace/name of port dns 53/UDP and
// its ServiceExport.
func exported(namespace, name string) []runtime.Object {
	return []runtime.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.53",
				Ports: []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}}}},
		&mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}},
	}
}

// TestAdvisoryMemberInjectsIntoOtherNamespace: a compromised member
// (cluster-a) writes, into its own cluster, EndpointSlices and a
// ServiceImport labelled as the controller's and as another member's,
// in kube-system and in the exported namespace, with an address of its
// choosing; it also exports a Service from a namespace cluster-b lacks.
// The controller writes into cluster-b only objects of the imports, each
// in its export's own namespace (kube-system only for the export made
// there), never in a namespace cluster-b does not have, and never the
// injected address.
func TestAdvisoryMemberInjectsIntoOtherNamespace(t *testing.T) {
	const injected = "10.244.9.9"
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	add(t, b, namespace("kube-system"))
	add(t, a, namespace("kube-system"), namespace("payments"))
	add(t, a, exported("kube-system", "dns")...)
	add(t, a, exported("payments", "api")...)
	ours := map[string]string{objects.LabelManagedBy: objects.ManagedByValue, objects.LabelSliceManagedBy: objects.ManagedByValue,
		mcsv1beta1.LabelServiceName: "web", mcsv1beta1.LabelSourceCluster: "cluster-b", discoveryv1.LabelServiceName: "web"}
	forged := func(ns, name string) *discoveryv1.EndpointSlice {
		s := testfixture.ServiceEndpoints(ns, "web", name, testfixture.Endpoint(injected, true))
		s.Labels = ours
		s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}
		return s
	}
	// Marked as the controller's slice only: not deleted as one of its
	// imported slices, and never read as the Service's endpoints.
	marked := forged("shop", "web-marked")
	marked.Labels = map[string]string{objects.LabelSliceManagedBy: objects.ManagedByValue, discoveryv1.LabelServiceName: "web"}
	add(t, a, forged("kube-system", "web-forged"), forged("shop", "web-forged"), forged("xcc-dns", "web-forged"), marked,
		&mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "web", Labels: ours},
			Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.ClusterSetIP, IPs: []string{injected}}})
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "cluster-b imports shop/web and kube-system/dns", func() bool {
		return hasImport(e.ctx, b) && hasServiceImport(e, b, "kube-system", "dns")
	})
	for range 3 {
		e.rec.Add("dev-team/prod")
		time.Sleep(50 * time.Millisecond)
	}
	imports := map[string]bool{"shop/web": true, "kube-system/dns": true}
	sis, err := b.MCS.MulticlusterV1beta1().ServiceImports("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range sis.Items {
		if !imports[si.Namespace+"/"+si.Name] || slices.Contains(si.Spec.IPs, injected) {
			t.Errorf("cluster-b holds ServiceImport %s/%s (ips %v): only the imports, each in its export's namespace", si.Namespace, si.Name, si.Spec.IPs)
		}
	}
	svcs, err := b.CoreV1().Services("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		if !imports[s.Namespace+"/"+s.Labels[mcsv1beta1.LabelServiceName]] {
			t.Errorf("cluster-b holds Service %s/%s of import %q", s.Namespace, s.Name, s.Labels[mcsv1beta1.LabelServiceName])
		}
	}
	sls, err := b.DiscoveryV1().EndpointSlices("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sls.Items {
		if s.Namespace != e.cfg.SliceNamespace && !imports[s.Namespace+"/"+s.Labels[mcsv1beta1.LabelServiceName]] {
			t.Errorf("cluster-b holds EndpointSlice %s/%s of import %q", s.Namespace, s.Name, s.Labels[mcsv1beta1.LabelServiceName])
		}
		for _, ep := range s.Endpoints {
			if slices.Contains(ep.Addresses, injected) {
				t.Errorf("cluster-b's EndpointSlice %s/%s holds the injected address", s.Namespace, s.Name)
			}
		}
	}
}

// hasServiceImport reports whether m holds the ServiceImport ns/name.
func hasServiceImport(e *testEnv, m testfixture.Member, ns, name string) bool {
	_, err := m.MCS.MulticlusterV1beta1().ServiceImports(ns).Get(e.ctx, name, metav1.GetOptions{})
	return err == nil
}

// TestAdvisoryUnvalidatedEndpointAddresses: a member's exported Service
// whose EndpointSlices hold every class of address the advisories found
// unvalidated (testfixture.AdvisoryAddresses), with no allowed CIDRs set,
// reaches another member with its valid endpoint only: in the imported
// EndpointSlices kube-proxy serves behind a ClusterSetIP, and in the
// clusterset DNS records of a Headless import.
func TestAdvisoryUnvalidatedEndpointAddresses(t *testing.T) {
	for _, headless := range []bool{false, true} {
		t.Run(map[bool]string{false: "ClusterSetIP", true: "Headless"}[headless], func(t *testing.T) {
			a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
			if headless {
				svc, err := a.CoreV1().Services("shop").Get(t.Context(), "web", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				svc.Spec.ClusterIP = corev1.ClusterIPNone
				if err := a.Tracker().Update(corev1.SchemeGroupVersion.WithResource("services"), svc, "shop"); err != nil {
					t.Fatal(err)
				}
			}
			add(t, a, hostileSlices()...)
			e := twoMembers(t, a, b)
			testfixture.Eventually(t, "cluster-a's valid endpoint imported into cluster-b", func() bool {
				return slices.Contains(addressesIn(t, e, b, "shop"), "10.244.1.5")
			})
			if headless {
				testfixture.Eventually(t, "the clusterset DNS records of cluster-b hold the valid endpoint", func() bool {
					return slices.Contains(addressesIn(t, e, b, e.cfg.SliceNamespace), "10.244.1.5")
				})
			}
			refused := map[netip.Addr]string{}
			for _, h := range testfixture.AdvisoryAddresses {
				refused[netip.MustParseAddr(h.Addr).Unmap()] = h.Addr
			}
			for _, addr := range addressesIn(t, e, b, "") {
				if ip, err := netip.ParseAddr(addr); err == nil && refused[ip.Unmap()] != "" {
					t.Errorf("cluster-b holds %s (advertised as %s)", addr, refused[ip.Unmap()])
				}
			}
		})
	}
}

// hostileSlices are EndpointSlices of shop/web, one per family, of every
// advisory address, ready.
func hostileSlices() []runtime.Object {
	v4 := testfixture.ServiceEndpoints("shop", "web", "web-hostile-4")
	v6 := testfixture.ServiceEndpoints("shop", "web", "web-hostile-6")
	v6.AddressType = discoveryv1.AddressTypeIPv6
	for _, h := range testfixture.AdvisoryAddresses {
		s := v6
		if netip.MustParseAddr(h.Addr).Unmap().Is4() {
			s = v4
		}
		s.Endpoints = append(s.Endpoints, testfixture.Endpoint(h.Addr, true))
	}
	for _, s := range []*discoveryv1.EndpointSlice{v4, v6} {
		s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}
	}
	return []runtime.Object{v4, v6}
}

// addressesIn are the endpoint addresses of every EndpointSlice of m in
// namespace ns ("" for all).
func addressesIn(t *testing.T, e *testEnv, m testfixture.Member, ns string) []string {
	t.Helper()
	list, err := m.DiscoveryV1().EndpointSlices(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			out = append(out, ep.Addresses...)
		}
	}
	return out
}

// The addresses of a member's endpoints that are refused (metadata,
// loopback, link-local, ..., and one that is no address, escape
// sequences in it) are named in the Valid message of its ServiceExport,
// counted, the first few shown escaped and cut: the member's operator
// cannot read the controller's log. Its valid endpoint is imported.
func TestControllerClusterSetRefusedAddressesInExportStatus(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	hostile := hostileSlices()
	garbage := hostile[0].(*discoveryv1.EndpointSlice)
	garbage.Endpoints = append([]discoveryv1.Endpoint{testfixture.Endpoint("\x1b[2J"+strings.Repeat("9", 4<<10), true)}, garbage.Endpoints...)
	add(t, a, hostile...)
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "cluster-a's valid endpoint imported into cluster-b", func() bool {
		return slices.Contains(addressesIn(t, e, b, "shop"), "10.244.1.5")
	})
	want := fmt.Sprintf("%d endpoint addresses refused", len(testfixture.AdvisoryAddresses)+1)
	var valid metav1.Condition
	testfixture.Eventually(t, "cluster-a's export Valid, naming the refused addresses", func() bool {
		ex, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		i := slices.IndexFunc(ex.Status.Conditions, func(c metav1.Condition) bool { return c.Type == "Valid" })
		if i < 0 {
			return false
		}
		valid = ex.Status.Conditions[i]
		return strings.Contains(valid.Message, want)
	})
	t.Logf("Valid: %s", valid.Message)
	if valid.Status != metav1.ConditionTrue || !strings.Contains(valid.Message, "127.0.0.1") ||
		!printable.IsLine(valid.Message) || len(valid.Message) > aggregate.MaxConditionMessageBytes {
		t.Errorf("Valid %s %q (%d bytes); want True, the first refused named, escaped and cut", valid.Status, valid.Message, len(valid.Message))
	}
}
