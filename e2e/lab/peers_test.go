package lab

import (
	"strings"
	"testing"
)

func TestWithoutCache(t *testing.T) {
	in := `zone:53 {
    errors
    cache {
        success 65536
        denial 9984 5
    }
    etcd zone {
        path /skydns
    }
}
.:53 {
    forward . 127.0.0.1:1
    cache 30
}
`
	got := WithoutCache(in)
	for _, gone := range []string{"cache", "success", "denial"} {
		if strings.Contains(got, gone) {
			t.Errorf("%q left in:\n%s", gone, got)
		}
	}
	for _, kept := range []string{"errors", "etcd zone {\n        path /skydns\n    }\n}", "forward . 127.0.0.1:1\n}"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%q missing in:\n%s", kept, got)
		}
	}
}

func TestStockMCSCorefile(t *testing.T) {
	got := StockMCSCorefile(StockSettings{DNS: 1053, Ready: 1081, Metrics: 1153, TTL: 30}, "b.kubeconfig", ClusterSetZone, true)
	for _, want := range []string{
		"cluster.local:1053 clusterset.local:1053 {\n    bind 127.0.0.1\n",
		"kubernetes cluster.local clusterset.local {\n        kubeconfig b.kubeconfig\n        multicluster clusterset.local\n        ttl 30\n",
		"ready 127.0.0.1:1081\n", "    cache 30\n", "prometheus 127.0.0.1:1153\n", "    loadbalance\n}",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(StockMCSCorefile(StockSettings{DNS: 1053, Ready: 1081, Metrics: 1153, TTL: 30}, "b.kubeconfig", ClusterSetZone, false), "cache") {
		t.Error("cache without cache")
	}
}

func TestExternalDNSCorefile(t *testing.T) {
	got := ExternalDNSCorefile(1053, 1081, "http://127.0.0.1:2379")
	for _, want := range []string{
		"edns.test:1053 {\n    bind 127.0.0.1\n",
		"ready 127.0.0.1:1081\n",
		"etcd edns.test {\n        path /skydns\n        endpoint http://127.0.0.1:2379\n    }\n}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "cache") {
		t.Errorf("a cache in:\n%s", got)
	}
}
