package gatewaydns

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A workload cluster whose API server answers hostile lists is cut off:
// its status says ClusterCutOff (with a Warning Event), and the other
// clusters keep publishing, before and after.
func TestControllerHostileClusterIsCutOff(t *testing.T) {
	for _, mode := range []struct {
		name string
		mode testfixture.HostileMode
		want string
	}{
		{"endless list", testfixture.EndlessList, "response body too large"},
		{"endless pages", testfixture.EndlessPages, "too many objects"},
		{"fat pages", testfixture.FatPages, "too many bytes"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv := testfixture.NewHostileAPIServer(t, mode.mode)
			reads := workload.ReadLimits{ListPageSize: 100, MaxResponseBytes: 1 << 20, MaxListBytes: 4 << 20,
				MaxBytesPerCluster: 8 << 20, MaxObjectsPerCluster: 500, CutOffRetry: time.Hour}
			gd := testfixture.GatewayDNS("gw")
			gd.Spec.Names = &v1alpha1.Names{Enabled: true}
			e := newTestEnvClients(t,
				[]runtime.Object{
					testfixture.KubeconfigSecret("cluster-a", "cluster-a"),
					testfixture.KubeconfigSecret("cluster-b", "cluster-b"),
					testfixture.KubeconfigSecret("cluster-h", string(srv.Kubeconfig)),
				},
				[]runtime.Object{
					testfixture.CAPICluster("cluster-a", contour, ""),
					testfixture.CAPICluster("cluster-b", contour, ""),
					testfixture.CAPICluster("cluster-h", contour, ""),
					gatewayDNSObject(t, gd),
				},
				map[string]*fake.Clientset{
					"cluster-a": fakeWorkload(true, "10.0.0.1"),
					"cluster-b": fakeWorkload(true, "10.0.0.2"),
				}, nil,
				func(cfg *testConfig) {
					cfg.ReadLimits = reads
					fakes := cfg.NewClient
					cfg.NewClient = func(raw []byte) (workload.Client, error) {
						if bytes.Equal(raw, srv.Kubeconfig) {
							// The production client, as for any tenant's kubeconfig.
							return workload.NewClientFromKubeconfig(raw, kubeconfig.Policy{}, reads.MaxResponseBytes, workload.Requests{})
						}
						return fakes(raw)
					}
				})

			want := []string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}
			e.eventually(want, "cluster-a", "cluster-b")
			st := e.eventuallyStatus(gd.Name, func(s v1alpha1.GatewayDNSStatus) bool {
				return reasonsOf(s) == "cluster-a=Published cluster-b=Published cluster-h="+desired.ReasonClusterCutOff
			})
			for _, c := range st.Clusters {
				if c.Name == "cluster-h" && (!strings.Contains(c.Message, mode.want) || !strings.Contains(c.Message, "last published addresses kept")) {
					t.Errorf("cluster-h: %q, want it to say %q", c.Message, mode.want)
				}
			}
			if !e.sawEvent("Warning", desired.ReasonClusterCutOff, "cluster cluster-h") {
				t.Error("no Warning Event ClusterCutOff for cluster-h")
			}

			// Lists sent before the cut-off may still land on a loaded
			// machine: count from when none has for a second.
			before := srv.Lists.Load()
			for quiet := time.Now(); time.Since(quiet) < time.Second; time.Sleep(50 * time.Millisecond) {
				if n := srv.Lists.Load(); n != before {
					before, quiet = n, time.Now()
				}
			}
			// The others still publish: a change reaches them, and
			// syncs the GatewayDNS without listing the cut-off cluster.
			svc := testfixture.GatewayService(testfixture.IPs("10.0.0.9")...)
			if _, err := e.workloads["cluster-a"].CoreV1().Services("projectcontour").UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.eventually([]string{gwA + " IPv4 10.0.0.9", gwB + " IPv4 10.0.0.2"}, "cluster-a", "cluster-b")
			time.Sleep(500 * time.Millisecond)
			if after := srv.Lists.Load(); after != before {
				t.Errorf("%d more lists of the cut-off cluster", after-before)
			}
		})
	}
}
