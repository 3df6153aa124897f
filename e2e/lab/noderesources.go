package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Slice annotations serve reads (internal/contract), repeated here: the
// e2e module does not import the main module.
const (
	annotationHostname   = "connectivity.tanzu.vmware.com/dns-hostname"
	annotationGatewayRef = "connectivity.tanzu.vmware.com/gateway-dns-ref"
)

// RecordHost is the hostname of the i-th slice WriteRecordSlices writes:
// the gateway name of a Cluster r<i> of the walkthrough's namespace,
// *.gateway.r<i>.dev-team.clusters.xcc.test (label is the name asked for
// it in place of *).
func RecordHost(i int, label string) string {
	return fmt.Sprintf("%s.gateway.r%d.%s.clusters.%s", label, i, ClusterNamespace, Zone)
}

// RecordAddress is the address of the i-th record, in 10.100.0.0/14
// (only answered, never routed or connected to).
func RecordAddress(i int) string {
	return fmt.Sprintf("10.%d.%d.%d", 100+i/65536, (i/256)%256, i%256)
}

// WriteRecordSlices writes n EndpointSlices into the slice namespace of c
// as the controller writes a cluster's gateway (one slice per record:
// the hostname and gateway-dns-ref annotations, one address), with
// several writers and no client-side rate limit.
func WriteRecordSlices(ctx context.Context, c *NodeCluster, n int) error {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	const writers = 8
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				s := &discoveryv1.EndpointSlice{
					ObjectMeta: metav1.ObjectMeta{
						Name:      fmt.Sprintf("record-%d", i),
						Namespace: SliceNamespace,
						Annotations: map[string]string{
							annotationHostname:   RecordHost(i, "*"),
							annotationGatewayRef: ClusterNamespace + "/" + GatewayDNSName,
						},
					},
					AddressType: discoveryv1.AddressTypeIPv4,
					Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{RecordAddress(i)}}},
				}
				if err := WriteEndpointSlice(ctx, client, c.Name, s); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// ContainerMemory returns the working set (usage less inactive file
// pages, as the kubelet counts it) of every container of pod ns/name of
// c, read from the pod's memory cgroup, and of the pod as a whole ("").
func (c *NodeCluster) ContainerMemory(ctx context.Context, ns, name string) (map[string]int64, error) {
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	podDir := ""
	root := filepath.Join(cgroupV1Dir, "memory", nodeCgroup, c.Name)
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasSuffix(path, "pod"+string(p.UID)) {
			podDir = path
			return filepath.SkipAll
		}
		return nil
	})
	if podDir == "" {
		return nil, fmt.Errorf("no memory cgroup of pod %s/%s of %s under %s", ns, name, c.Name, root)
	}
	out := map[string]int64{}
	if out[""], err = workingSet(podDir); err != nil {
		return nil, err
	}
	for _, s := range p.Status.ContainerStatuses {
		id := strings.TrimPrefix(s.ContainerID, "containerd://")
		if out[s.Name], err = workingSet(filepath.Join(podDir, id)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func workingSet(dir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return 0, err
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, err
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(stat), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "total_inactive_file" {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil && v < usage {
				return usage - v, nil
			}
		}
	}
	return usage, nil
}
