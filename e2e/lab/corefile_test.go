package lab

import (
	"strings"
	"testing"
)

func TestLocalCorefileClusterDNS(t *testing.T) {
	patched := ClusterDNSCorefile + `
# xcc-dns begin: managed
xcc.test {
    errors
    cache 30
    forward . 127.0.0.1:5300
}
# xcc-dns end
`
	got, err := localCorefile(patched, corefileEdit{
		DNSPort: 1053, HealthPort: 1080, ReadyPort: 1081, MetricsPort: 1153,
		Upstream: "127.0.0.1:1054", Kubeconfig: "b.kubeconfig",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		".:1053 {\n    bind 127.0.0.1\n",
		"xcc.test:1053 {\n    bind 127.0.0.1\n",
		"health 127.0.0.1:1080 {\n       lameduck 5s",
		"ready 127.0.0.1:1081\n",
		"prometheus 127.0.0.1:1153\n",
		"forward . 127.0.0.1:1054\n",
		"kubernetes cluster.local in-addr.arpa ip6.arpa {\n       kubeconfig b.kubeconfig\n",
		"forward . 127.0.0.1:5300\n",
		"# xcc-dns begin: managed\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, gone := range []string{":53 ", ":9153", "/etc/resolv.conf"} {
		if strings.Contains(got, gone) {
			t.Errorf("still has %q:\n%s", gone, got)
		}
	}
}

func TestLocalCorefileOurs(t *testing.T) {
	src := "xcc.test:{$DNS_PORT} {\n    health :{$HEALTH_PORT}\n    ready :{$READY_PORT}\n    prometheus :{$METRICS_PORT}\n}\n.:{$DNS_PORT} {\n    forward . {$UPSTREAM}\n}\n"
	got, err := localCorefile(src, corefileEdit{})
	if err != nil {
		t.Fatal(err)
	}
	want := "xcc.test:{$DNS_PORT} {\n    bind 127.0.0.1\n    health 127.0.0.1:{$HEALTH_PORT}\n    ready 127.0.0.1:{$READY_PORT}\n    prometheus 127.0.0.1:{$METRICS_PORT}\n}\n.:{$DNS_PORT} {\n    bind 127.0.0.1\n    forward . {$UPSTREAM}\n}\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// A snippet gets no bind of its own: the server block that imports it
// has one, and CoreDNS refuses to bind one address twice.
func TestLocalCorefileSnippet(t *testing.T) {
	src := "(xcc-reverse) {\n    prometheus :{$METRICS_PORT}\n}\n192.0.2.0/24:{$DNS_PORT} {\n    import xcc-reverse\n}\n"
	got, err := localCorefile(src, corefileEdit{})
	if err != nil {
		t.Fatal(err)
	}
	want := "(xcc-reverse) {\n    prometheus 127.0.0.1:{$METRICS_PORT}\n}\n192.0.2.0/24:{$DNS_PORT} {\n    bind 127.0.0.1\n    import xcc-reverse\n}\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestLocalCorefileUnbalanced(t *testing.T) {
	for _, src := range []string{".:53 {\n", "}\n"} {
		if _, err := localCorefile(src, corefileEdit{}); err == nil {
			t.Errorf("no error for %q", src)
		}
	}
}
