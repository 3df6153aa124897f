package controller

import (
	"context"
	"flag"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2/ktesting"

	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
)

func TestDiscoverClusterResource(t *testing.T) {
	tests := []struct {
		name    string
		served  []string
		want    string
		wantErr bool
	}{
		{name: "both served: v1beta2", served: []string{"v1beta1", "v1beta2"}, want: "v1beta2"},
		{name: "only v1beta1", served: []string{"v1beta1"}, want: "v1beta1"},
		{name: "no Cluster API", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
			for _, v := range tt.served {
				d.Resources = append(d.Resources, &metav1.APIResourceList{
					GroupVersion: clusterAPIGroup + "/" + v,
					APIResources: []metav1.APIResource{{Name: "clusters", Namespaced: true, Kind: "Cluster"}},
				})
			}
			gvr, err := discoverClusterResource(d)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && (gvr.Version != tt.want || gvr.Resource != "clusters" || gvr.Group != clusterAPIGroup) {
				t.Errorf("got %v, want version %s", gvr, tt.want)
			}
		})
	}
}

func TestOwnNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "xcc-system")
	if got := OwnNamespace(); got != "xcc-system" {
		t.Errorf("got %q, want the pod's namespace", got)
	}
}

// TestRunElectedReleasesAfterRun: the Lease stays held while the
// controller finishes after ctx ended, and is released once it returned,
// so a standby never starts while the old leader still writes.
func TestRunElectedReleasesAfterRun(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kube := fake.NewClientset()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "xcc-dns", "lease", kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: "me"})
	if err != nil {
		t.Fatal(err)
	}
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("xcc-dns").Get(context.Background(), "lease", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var leading atomic.Bool
	running := make(chan struct{})
	var heldWhileStopping []string
	done := make(chan error, 1)
	go func() {
		done <- runElected(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond, Name: "test",
		}, &leading, func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			// Writes still landing after ctx ended.
			for range 5 {
				time.Sleep(100 * time.Millisecond)
				heldWhileStopping = append(heldWhileStopping, holder())
			}
			return nil
		})
	}()
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("never led")
	}
	if !leading.Load() {
		t.Error("leading not set")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runElected did not return")
	}
	for i, h := range heldWhileStopping {
		if h != "me" {
			t.Errorf("while the controller stopped (%d): Lease held by %q, want still me", i, h)
		}
	}
	if h := holder(); h != "" {
		t.Errorf("after return: Lease held by %q, want released", h)
	}
	if leading.Load() {
		t.Error("leading still set")
	}
}

func TestTakeoverBound(t *testing.T) {
	if got, want := TakeoverBound(DefaultLeaseDuration, DefaultRetryPeriod), 14400*time.Millisecond; got != want {
		t.Errorf("TakeoverBound(defaults) = %s, want %s", got, want)
	}
}

// The limits' flags default to the named constants, and a limit that is
// not positive stops the controller at start.
func TestLimitFlags(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := desired.Limits{NamesPerCluster: desired.DefaultMaxNamesPerCluster, NamesPerGatewayDNS: desired.DefaultMaxNamesPerGatewayDNS,
		HeadlessEndpointsPerCluster: desired.DefaultMaxHeadlessEndpointsPerCluster, HeadlessEndpointsPerGatewayDNS: desired.DefaultMaxHeadlessEndpointsPerGatewayDNS}
	if o.Limits != want {
		t.Errorf("defaults %+v, want %+v", o.Limits, want)
	}
	if err := o.checkLimits(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
	wantReads := workload.ReadLimits{ListPageSize: workload.DefaultListPageSize, MaxResponseBytes: workload.DefaultMaxResponseBytes,
		MaxListBytes: workload.DefaultMaxListBytes, MaxBytesPerCluster: workload.DefaultMaxBytesPerCluster,
		MaxObjectsPerCluster: workload.DefaultMaxObjectsPerCluster, ListTimeout: workload.DefaultListTimeout,
		WatchTimeout: workload.DefaultWatchTimeout, CutOffRetry: workload.DefaultCutOffRetry}
	if o.ReadLimits != wantReads {
		t.Errorf("read limits %+v, want %+v", o.ReadLimits, wantReads)
	}
	bad := o
	bad.ReadLimits.MaxObjectsPerCluster = 0
	if err := bad.checkLimits(); err == nil || !strings.Contains(err.Error(), "--workload-max-objects") {
		t.Errorf("zero object limit: %v", err)
	}
	if err := fs.Parse([]string{"--max-names-per-gatewaydns=0"}); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	if err := Run(ctx, o); err == nil || !strings.Contains(err.Error(), "--max-names-per-gatewaydns=0") {
		t.Errorf("Run with a zero limit: %v", err)
	}
}
