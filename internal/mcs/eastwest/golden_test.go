package eastwest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

var update = flag.Bool("update", false, "write testdata/objects.yaml from Desired")

// goldenFile holds Desired's objects of one export of every kind of port:
// the end-to-end test EastWestObjects creates them on a real API server
// under the Gateway API CRDs and reads them back unchanged.
var goldenFile = filepath.Join("testdata", "objects.yaml")

// TestGoldenObjects: testdata/objects.yaml is what Desired makes now
// (go test -run TestGoldenObjects -update writes it).
func TestGoldenObjects(t *testing.T) {
	k := aggregate.Key{Namespace: "market", Name: "cart"}
	ps := []aggregate.Port{
		{Name: "web", Protocol: "TCP", Port: 8080, AppProtocol: "http"},
		{Name: "secure", Protocol: "TCP", Port: 8443, AppProtocol: "tls"},
		{Name: "db", Protocol: "TCP", Port: 5432},
	}
	objs := Desired(testConfig, k, ps, map[string]int32{"tcp-5432": 31000})
	all := []runtime.Object{objs.ListenerSet}
	for _, r := range objs.HTTPRoutes {
		all = append(all, r)
	}
	for _, r := range objs.TLSRoutes {
		all = append(all, r)
	}
	for _, r := range objs.TCPRoutes {
		all = append(all, r)
	}
	var buf bytes.Buffer
	for _, o := range all {
		o.GetObjectKind().SetGroupVersionKind(gvkOf(o))
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Errorf("%s is not what Desired makes: run go test -run TestGoldenObjects -update", goldenFile)
	}
}
