package workload

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// propertyClient is a member client with a cluster id property.
type propertyClient struct {
	*fake.Clientset
	value atomic.Pointer[string]
	reads atomic.Int32
}

func (p *propertyClient) ClusterIDProperty(context.Context) (*string, error) {
	p.reads.Add(1)
	return p.value.Load(), nil
}

var _ PropertyClient = (*propertyClient)(nil)

// The property is unknown until a first read answers, then its value;
// a read is not repeated within PropertyRefresh, and a change is told
// through the cluster's namespace callback.
func TestClusterProperty(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &propertyClient{Clientset: fake.NewClientset()}
	client.value.Store(ptr.To("east"))
	var notified atomic.Int32
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) { notified.Add(1) }, OnService: func([]string) {}, Gauge: func(int) {}})
	m.Start(ctx)
	acc := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "set")
	if _, known := m.ClusterProperty(acc.Cluster); known {
		t.Fatal("known before any read")
	}
	var got *string
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		var known bool
		got, known = m.ClusterProperty(acc.Cluster)
		return known, nil
	})
	if err != nil || got == nil || *got != "east" {
		t.Fatalf("property %v (%v), want east", got, err)
	}
	before := notified.Load()
	if before == 0 {
		t.Error("no callback when the property was first read")
	}
	for range 10 {
		m.ClusterProperty(acc.Cluster)
	}
	if n := client.reads.Load(); n != 1 {
		t.Errorf("%d reads within the refresh period, want 1", n)
	}
}

// parseProperty reads spec.value, and refuses what is not a property.
func TestParseProperty(t *testing.T) {
	v, err := parseProperty([]byte(`{"apiVersion":"about.k8s.io/v1alpha1","kind":"ClusterProperty","spec":{"value":"east"}}`))
	if err != nil || v == nil || *v != "east" {
		t.Errorf("parse = %v, %v", v, err)
	}
	if v, err := parseProperty([]byte(`{"spec":{}}`)); err != nil || v == nil || *v != "" {
		t.Errorf("no value: %v, %v; want the empty id, which membership refuses", v, err)
	}
	if _, err := parseProperty([]byte(`<html>`)); err == nil {
		t.Error("garbage parsed")
	}
}
