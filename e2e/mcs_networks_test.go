package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// eastWestGolden is what the controller's eastwest.Desired makes of one
// export with an HTTP, a TLS and a TCP port (kept equal to it by the main
// module's TestGoldenObjects).
var eastWestGolden = filepath.Join("..", "internal", "mcs", "eastwest", "testdata", "objects.yaml")

// testEastWestObjects: the ListenerSet and routes the controller writes
// into an exporting member for importers of other networks are accepted
// by a real API server under the Gateway API v1.6 CRDs (their schemas and
// CEL rules), and read back with the spec and labels written: the
// controller's next write then has nothing to update.
func testEastWestObjects(t *testing.T) {
	ctx := ctxFor(t)
	a := theLab.Workload(lab.ClusterA)
	dir, err := lab.GatewayAPICRDDir(ctx, "..")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.UninstallGatewayAPI(ctx, a); err != nil {
			t.Error(err)
		}
	})
	if err := lab.InstallGatewayAPI(ctx, a, dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(eastWestGolden)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		want := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &want.Object); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(want.Object, "status")
		if err := lab.EnsureNamespace(ctx, a, want.GetNamespace()); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: strings.ToLower(want.GetKind()) + "s"}
		res := a.Dynamic.Resource(gvr).Namespace(want.GetNamespace())
		if _, err := res.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s %s refused: %v", want.GetKind(), want.GetName(), err)
		}
		got, err := res.Get(ctx, want.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := jsonOf(t, got.Object["spec"]), jsonOf(t, want.Object["spec"]); g != w {
			t.Errorf("%s %s read back another spec than written:\n got %s\nwant %s", want.GetKind(), want.GetName(), g, w)
		}
		if g, w := jsonOf(t, got.GetLabels()), jsonOf(t, want.GetLabels()); g != w {
			t.Errorf("%s %s labels %s, want %s", want.GetKind(), want.GetName(), g, w)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
