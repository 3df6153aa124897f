package gatewaydns

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// clusterEntry is the status entry of cluster in st, or a zero one.
func clusterEntry(st v1alpha1.GatewayDNSStatus, cluster string) v1alpha1.ClusterStatus {
	for _, c := range st.Clusters {
		if c.Name == cluster {
			return c
		}
	}
	return v1alpha1.ClusterStatus{}
}

// A target whose API server does not answer holds none of the latest
// records, so no cluster is Published: each is WriteFailed naming it,
// status.targets lists it with a since-time that stays while it keeps
// failing, and once it answers again every cluster is Published.
func TestControllerDownTargetIsNotPublished(t *testing.T) {
	g := newGate()
	e := threeTargets(t, g)
	g.setFail(errTimedOut)
	e.setGatewayA("10.0.0.9")
	e.eventually([]string{gwA + " IPv4 10.0.0.9", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3"}, "cluster-a", "cluster-b")
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return len(s.Targets) > 0 })
	t.Logf("while cluster-c is down: %s", readyReason(st))
	if len(st.Targets) != 1 || st.Targets[0].Name != "cluster-c" || st.Targets[0].Reason != string(ReasonWriteFailed) || st.Targets[0].Since.IsZero() {
		t.Fatalf("targets %+v, want cluster-c WriteFailed with a since-time", st.Targets)
	}
	if st.ReadyClusters != 0 {
		t.Errorf("%d clusters Ready while cluster-c lacks their records", st.ReadyClusters)
	}
	for _, name := range []string{"cluster-a", "cluster-b", "cluster-c"} {
		c := clusterEntry(st, name)
		if c.Ready || c.Reason != string(ReasonWriteFailed) || !strings.Contains(c.Message, "cluster-c") || c.Since == nil {
			t.Errorf("%s: %+v, want WriteFailed naming cluster-c, with a since-time", name, c)
		}
	}
	if msg := readyReason(st); !strings.HasPrefix(msg, string(ReasonWriteFailed)) || !strings.Contains(msg, "cluster-c (since ") {
		t.Errorf("Ready %q, want WriteFailed naming cluster-c and since when", msg)
	}

	// Still down at a later sync: the since-times stay.
	since := st.Targets[0].Since
	time.Sleep(1100 * time.Millisecond)
	e.setGatewayA("10.0.0.10")
	st = e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		a := clusterEntry(s, "cluster-a")
		return len(a.Addresses) == 1 && a.Addresses[0] == "10.0.0.10"
	})
	if len(st.Targets) != 1 || !st.Targets[0].Since.Equal(&since) {
		t.Errorf("targets %+v, want cluster-c still failing since %s", st.Targets, since)
	}
	if a := clusterEntry(st, "cluster-a"); a.Ready || a.Since == nil || !a.Since.Equal(&since) {
		t.Errorf("cluster-a %+v, want not Ready since %s", a, since)
	}

	// Back: its next try (after the backoff) writes it, and every
	// cluster is Published.
	g.setFail(nil)
	e.eventually([]string{gwA + " IPv4 10.0.0.10", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3"}, "cluster-c")
	st = e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return s.ReadyClusters == 3 && len(s.Targets) == 0
	})
	if c := findCondition(st, v1alpha1.ConditionReady); c == nil || c.Reason != string(ReasonPublished) {
		t.Errorf("Ready %q, want Published", readyReason(st))
	}
	for _, c := range st.Clusters {
		if c.Reason != desired.ReasonPublished || c.Since != nil {
			t.Errorf("%s: %+v, want Published without a since-time", c.Name, c)
		}
	}
}

// A target still being written is not Published either: its clusters
// say Writing, and status.targets names it.
func TestControllerHeldTargetIsWriting(t *testing.T) {
	g := newGate()
	e := threeTargets(t, g)
	g.close()
	e.setGatewayA("10.0.0.9")
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return len(s.Targets) == 1 && s.Targets[0].Name == "cluster-c" && s.Targets[0].Reason == string(ReasonWriting)
	})
	if a := clusterEntry(st, "cluster-a"); a.Ready || a.Reason != string(ReasonWriting) || !strings.Contains(a.Message, "cluster-c") {
		t.Errorf("cluster-a %+v, want Writing naming cluster-c", a)
	}
	g.release()
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 3 && len(s.Targets) == 0 })
}

// unreachableKubeconfig is a kubeconfig whose API server never answers.
func unreachableKubeconfig(t *testing.T) string {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["a"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["a"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["a"] = &clientcmdapi.Context{Cluster: "a", AuthInfo: "a"}
	kc.CurrentContext = "a"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A source cluster whose API server cannot be reached is
// ClusterUnreachable, and its entry says its last records are still
// served, since when; the other clusters stay Published.
func TestControllerUnreachableSourceServesLastRecords(t *testing.T) {
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-b": fakeWorkload(true, "10.0.0.2")})
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 2 })

	// cluster-a's kubeconfig now points at an API server that is down.
	if _, err := e.mgmt.CoreV1().Secrets("dev-team").Update(e.ctx, testfixture.KubeconfigSecret("cluster-a", unreachableKubeconfig(t)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return clusterEntry(s, "cluster-a").Reason == desired.ReasonClusterUnreachable
	})
	a := clusterEntry(st, "cluster-a")
	if a.Since == nil || !strings.Contains(a.Message, "serving last known records since "+formatSince(a.Since.Time)) {
		t.Errorf("cluster-a %+v, want the last records served since a time", a)
	}
	if len(a.Addresses) != 1 || a.Addresses[0] != "10.0.0.1" {
		t.Errorf("cluster-a addresses %v, want the last ones", a.Addresses)
	}
	if b := clusterEntry(st, "cluster-b"); !b.Ready || len(st.Targets) != 0 {
		t.Errorf("cluster-b %+v, targets %+v: want cluster-b Published", b, st.Targets)
	}
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}, "cluster-b")
}

// A source cluster whose API server goes down after its informers have
// listed is ClusterUnreachable once its reads have failed for a while,
// its last records still served, though its informers still hold what
// they read; back up, it is Published again.
func TestControllerSourceDownIsUnreachable(t *testing.T) {
	a := fakeWorkload(true, "10.0.0.1")
	d := testfixture.NewDownable(a)
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-b": fakeWorkload(true, "10.0.0.2")}, nil,
		func(cfg *testConfig) { cfg.ReadLimits.UnreachableAfter = 300 * time.Millisecond })
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 2 })

	d.Down()
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return clusterEntry(s, "cluster-a").Reason == desired.ReasonClusterUnreachable
	})
	ca := clusterEntry(st, "cluster-a")
	t.Logf("cluster-a down: %s", ca.Message)
	if !strings.Contains(ca.Message, "connection refused") || ca.Since == nil ||
		!strings.Contains(ca.Message, "serving last known records since "+formatSince(ca.Since.Time)) {
		t.Errorf("cluster-a %+v, want the error and the last records served since a time", ca)
	}
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}, "cluster-b")

	d.Up()
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 2 && len(s.Targets) == 0 })
}

// A target whose API server stops answering (a Cluster the GatewayDNS
// does not select, so none of its reads is a source's) is listed in
// status.targets as TargetUnreachable with since when, and the source's
// entry stops saying Published: its records may not be there. Back up,
// everything is Published again.
func TestControllerUnreachableTargetIsNotPublished(t *testing.T) {
	target := fakeWorkload(false, "")
	d := testfixture.NewDownable(target)
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-t", "cluster-t")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-t", map[string]string{"other": "yes"}, ""),
			gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-t": target}, nil,
		func(c *testConfig) { c.ReadLimits.UnreachableAfter = 300 * time.Millisecond })
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 1 && len(s.Targets) == 0 })

	d.Down()
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return len(s.Targets) == 1 && s.Targets[0].Name == "cluster-t" && s.Targets[0].Reason == string(ReasonTargetUnreachable)
	})
	if msg := st.Targets[0].Message; !strings.Contains(msg, "has not answered since") || !strings.Contains(msg, "records it last got") {
		t.Errorf("target entry %+v", st.Targets[0])
	}
	if a := clusterEntry(st, "cluster-a"); a.Ready || a.Reason != string(ReasonTargetUnreachable) || !strings.Contains(a.Message, "cluster-t") {
		t.Errorf("cluster-a %+v, want not Published, naming cluster-t", a)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c == nil || c.Reason != string(ReasonTargetUnreachable) {
		t.Errorf("Ready %+v", c)
	}

	d.Up()
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 1 && len(s.Targets) == 0 })
}
