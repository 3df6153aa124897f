package workload

import (
	"context"
	"fmt"
	"strings"
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

// readPropertyOf asks w's property until a read has ended, and returns
// what the last one said: its value, or why it failed.
func readPropertyOf(t *testing.T, m *Set, w *Cluster) (value *string, why string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 2*RequestTimeout, true, func(context.Context) (bool, error) {
		var known bool
		value, known = m.ClusterProperty(w)
		why = w.PropertyError()
		return known || why != "", nil
	})
	if err != nil {
		t.Fatal("no read of the property ended")
	}
	return value, why
}

// A member's API server answering the ClusterProperty with megabytes is
// refused once the cap has been read, not after it has sent them all:
// the server waits for the client to give up after the cap and 4 KiB.
func TestClusterPropertyReadIsCapped(t *testing.T) {
	srv := testfixture.NewHostileAPIServer(t, testfixture.HugeProperty)
	srv.PropertyPause.Store(maxPropertyBytes + 4<<10)
	m, w := hostileSet(t, srv, ReadLimits{CutOffRetry: time.Hour})
	start := time.Now()
	value, why := readPropertyOf(t, m, w)
	took := time.Since(start)
	if value != nil {
		t.Fatalf("a property of 8 MiB read as %d bytes", len(*value))
	}
	want := fmt.Sprintf("response body too large: more than %d bytes", maxPropertyBytes)
	if !strings.Contains(why, want) || !strings.Contains(why, "ClusterProperty "+ClusterIDProperty) {
		t.Errorf("refused with %q, want it to name the property and say %q", why, want)
	}
	if took > RequestTimeout/2 {
		t.Errorf("refused after %s: the whole body was waited for", took)
	}
	// The informers hold one small Namespace; the property's bytes are
	// given back once its read ends.
	if got := w.reads.bytes.Load(); got > 4<<10 {
		t.Errorf("the cluster's bytes are %d after the read: not given back", got)
	}
}

// The bytes of the property count against the member's bytes while they
// are read: a member whose informers hold nearly its budget cannot have
// a property read that would pass it.
func TestClusterPropertyCountsInTheClusterBytes(t *testing.T) {
	srv := testfixture.NewHostileAPIServer(t, testfixture.HugeProperty)
	srv.PropertyBytes.Store(maxPropertyBytes / 2)
	m, w := hostileSet(t, srv, ReadLimits{MaxBytesPerCluster: maxPropertyBytes / 4, CutOffRetry: time.Hour})
	value, why := readPropertyOf(t, m, w)
	if value != nil || !strings.Contains(why, "too many bytes") || !strings.Contains(why, fmt.Sprint(maxPropertyBytes/4)) {
		t.Errorf("property of %d bytes under a budget of %d: value %v, error %q; want too many bytes", maxPropertyBytes/2, maxPropertyBytes/4, value != nil, why)
	}
}
