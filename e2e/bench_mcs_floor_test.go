package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// floorQPS and floorBurst are the controller's rate limit per
	// workload cluster, every kind of request together
	// (workload.clientQPS, clientBurst): the floor writes at the
	// controller's client rate, no faster, through one limiter as the
	// controller's clients of a cluster share one.
	floorQPS   = 100
	floorBurst = 200
	// floorLabel marks the floor's objects; no controller or serve
	// selects them.
	floorLabel = "xcc-bench-floor"
)

// mcsFloor is what the fill and the deletion cost at the least: a bare
// client per member, at the controller's client rate, writing the
// objects the controller writes for n imports (ServiceImport and its
// status, the derived Service and the ServiceImport's address for a
// ClusterSetIP one, an imported EndpointSlice, a contract slice), each
// member side by side, and every export's status in its member; then
// deleting them. Nothing is computed or read back: the time is that of
// the writes alone.
type mcsFloor struct {
	fill, del time.Duration
	writes    int64
}

// measureMCSFloor measures the floor of the fill of sz.exports imports
// (names) in every member, and of their deletion.
func measureMCSFloor(ctx context.Context, sz mcsScaleSize, members []mcsMember, names []string) (mcsFloor, error) {
	var f mcsFloor
	clients := make([]floorClients, len(members))
	for i, m := range members {
		c, err := newFloorClients(m.cluster)
		if err != nil {
			return f, err
		}
		clients[i] = c
	}
	var writes atomic.Int64
	began := time.Now()
	// Every member side by side, however many there are, as the
	// controller writes them.
	err := inParallelOn(len(members), len(members), func(mi int) error {
		c := clients[mi]
		return inParallel(sz.exports, func(i int) error {
			return c.fillImport(ctx, sz.namespace(i), names[i], i, sz.member(i) == mi, &writes)
		})
	})
	f.fill, f.writes = time.Since(began), writes.Load()
	if err != nil {
		return f, err
	}
	began = time.Now()
	err = inParallelOn(len(members), len(members), func(mi int) error {
		c := clients[mi]
		return inParallel(sz.exports, func(i int) error { return c.deleteImport(ctx, sz.namespace(i), names[i], i) })
	})
	f.del = time.Since(began)
	return f, err
}

// floorClients are a member's clients at the controller's rate.
type floorClients benchClients

func newFloorClients(c *lab.Cluster) (floorClients, error) {
	b, err := newClientsLimited(c, floorQPS, floorBurst, flowcontrol.NewTokenBucketRateLimiter(floorQPS, floorBurst))
	return floorClients(b), err
}

func floorName(name string) string { return "floor-" + name }

// fillImport writes one import's objects into the member; source: the
// member exports it, and its export's status is written too.
func (c floorClients) fillImport(ctx context.Context, ns, name string, i int, source bool, writes *atomic.Int64) error {
	headless := i%mcsHeadlessEvery == 0
	typ := "ClusterSetIP"
	if headless {
		typ = "Headless"
	}
	labels := map[string]any{floorLabel: "true"}
	imports := c.dyn.Resource(lab.ServiceImportGVR).Namespace(ns)
	si := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lab.ServiceImportGVR.GroupVersion().String(), "kind": "ServiceImport",
		"metadata": map[string]any{"name": floorName(name), "namespace": ns, "labels": labels},
		"spec":     map[string]any{"type": typ, "ports": []any{map[string]any{"name": "http", "protocol": "TCP", "port": int64(80)}}},
	}}
	created, err := imports.Create(ctx, si, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("floor: create ServiceImport %s/%s: %w", ns, name, err)
	}
	writes.Add(1)
	created.Object["status"] = map[string]any{"clusters": []any{map[string]any{"cluster": "cluster-a"}}}
	if _, err := imports.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("floor: status of ServiceImport %s/%s: %w", ns, name, err)
	}
	writes.Add(1)
	if !headless {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: floorName(name), Namespace: ns, Labels: map[string]string{floorLabel: "true"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
		got, err := c.kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("floor: create Service %s/%s: %w", ns, svc.Name, err)
		}
		writes.Add(1)
		patch := fmt.Sprintf(`{"spec":{"ips":[%q]}}`, got.Spec.ClusterIP)
		if _, err := imports.Patch(ctx, floorName(name), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("floor: address of ServiceImport %s/%s: %w", ns, name, err)
		}
		writes.Add(1)
	}
	for _, s := range []*discoveryv1.EndpointSlice{floorSlice(ns, floorName(name), i), floorSlice(lab.SliceNamespace, floorName(ns+"-"+name), i)} {
		if _, err := c.kube.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("floor: create EndpointSlice %s/%s: %w", s.Namespace, s.Name, err)
		}
		writes.Add(1)
	}
	if source {
		exports := c.dyn.Resource(lab.ServiceExportGVR).Namespace(ns)
		e, err := exports.Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
		if err != nil {
			return fmt.Errorf("floor: get ServiceExport %s/%s: %w", ns, name, err)
		}
		e.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Valid", "status": "True", "reason": "Floor",
			"message": "floor", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
		if _, err := exports.UpdateStatus(ctx, e, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("floor: status of ServiceExport %s/%s: %w", ns, name, err)
		}
		writes.Add(1)
	}
	return nil
}

// floorSlice is an EndpointSlice of two ready endpoints, as the
// controller's imported and contract slices are, that nothing selects.
func floorSlice(ns, name string, i int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{floorLabel: "true"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}}
	for p := range 2 {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("198.19.%d.%d", 200+i/120, (i%120)*2+p+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

// deleteImport deletes one import's floor objects, slices first.
func (c floorClients) deleteImport(ctx context.Context, ns, name string, i int) error {
	gone := func(err error) error {
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	dels := []func() error{
		func() error {
			return c.kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, floorName(name), metav1.DeleteOptions{})
		},
		func() error {
			return c.kube.DiscoveryV1().EndpointSlices(lab.SliceNamespace).Delete(ctx, floorName(ns+"-"+name), metav1.DeleteOptions{})
		},
	}
	if i%mcsHeadlessEvery != 0 {
		dels = append(dels, func() error { return c.kube.CoreV1().Services(ns).Delete(ctx, floorName(name), metav1.DeleteOptions{}) })
	}
	dels = append(dels, func() error {
		return c.dyn.Resource(lab.ServiceImportGVR).Namespace(ns).Delete(ctx, floorName(name), metav1.DeleteOptions{})
	})
	for _, d := range dels {
		if err := gone(d()); err != nil {
			return fmt.Errorf("floor: delete in %s of %s/%s: %w", ns, ns, name, err)
		}
	}
	return nil
}

// saveProfile fetches the controller's Go profile path (under
// /debug/pprof/, the lab runs it with --profiling) into the directory of
// $XCC_BENCH_OUT as file, for `go tool pprof`; without XCC_BENCH_OUT it
// does nothing. A failure is logged, not fatal: the figures stand
// without it.
func saveProfile(ctx context.Context, t *testing.T, path, file string) {
	out := os.Getenv(benchOutEnv)
	if out == "" {
		return
	}
	body, err := controllerProfile(ctx, path)
	if err != nil {
		t.Logf("profile %s: %v", path, err)
		return
	}
	dst := filepath.Join(filepath.Dir(out), file)
	if err := os.WriteFile(dst, body, 0o644); err != nil {
		t.Logf("profile %s: %v", path, err)
		return
	}
	t.Logf("controller profile %s saved in %s", path, dst)
}

// controllerProfile reads the controller's Go profile path.
func controllerProfile(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+theLab.ControllerHTTP+"/debug/pprof/"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("profile %s: %s", path, resp.Status)
	}
	return body, nil
}
