package corefile

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// kubernetesSpan is what ClusterSetCoreDNS puts in place of kubeadm's
// kubernetes line.
const kubernetesSpan = `    # xcc-dns kubernetes begin: managed by xcc-syncer patch-corefile; edits inside are overwritten; the line after this one is put back on removal
#|    kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubernetes cluster.local in-addr.arpa ip6.arpa clusterset.local {
        multicluster clusterset.local
    # xcc-dns kubernetes end
`

const kubeadmKubernetesLine = "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n"

// clusterSetBlock is blockFor with the clusterset zone forwarded too.
var clusterSetBlock = strings.Replace(blockFor, "xcc.test:53 {", "xcc.test:53 clusterset.local:53 {", 1)

// TestPatchClusterSetByCoreDNS patches for the cluster DNS's kubernetes
// plugin answering the clusterset zone, switches back and forth, and
// refuses what it cannot rewrite safely. One row per Corefile, one loop.
func TestPatchClusterSetByCoreDNS(t *testing.T) {
	coredns := Options{ForwardTo: forwardTo, ClusterSetZone: DefaultClusterSetZone, ClusterSetServer: ClusterSetCoreDNS}
	serve := Options{ForwardTo: forwardTo, ClusterSetZone: DefaultClusterSetZone}
	byCoreDNS := strings.Replace(kubeadmCorefile, kubeadmKubernetesLine, kubernetesSpan, 1) + "\n" + blockFor
	byServe := kubeadmCorefile + "\n" + clusterSetBlock
	if byCoreDNS == kubeadmCorefile+"\n"+blockFor {
		t.Fatal("kubeadm's kubernetes line not found in the fixture")
	}
	noBrace := ".:53 {\n    kubernetes cluster.local\n    forward . /etc/resolv.conf\n}\n"
	tests := []struct {
		name    string
		old     string
		opts    Options
		want    string
		action  Action
		wantErr string
	}{
		{name: "kubeadm default", old: kubeadmCorefile, opts: coredns, want: byCoreDNS, action: Added},
		{name: "from serve to coredns", old: byServe, opts: coredns, want: byCoreDNS, action: Replaced},
		{name: "from coredns back to serve", old: byCoreDNS, opts: serve, want: byServe, action: Replaced},
		{name: "remove gives the original back", old: byCoreDNS, opts: Options{Remove: true}, want: kubeadmCorefile, action: Removed},
		{
			name: "only the kubernetes lines left: remove puts the line back",
			old:  strings.Replace(kubeadmCorefile, kubeadmKubernetesLine, kubernetesSpan, 1), opts: Options{Remove: true},
			want: kubeadmCorefile, action: Removed,
		},
		{
			name: "another clusterset zone replaces the lines",
			old:  byCoreDNS, opts: Options{ForwardTo: forwardTo, ClusterSetZone: "MCS.Example.", ClusterSetServer: ClusterSetCoreDNS},
			want: strings.ReplaceAll(byCoreDNS, "clusterset.local", "mcs.example"), action: Replaced,
		},
		{
			name: "edits inside the lines are overwritten",
			old:  strings.Replace(byCoreDNS, "multicluster clusterset.local", "multicluster clusterset.local other.example", 1), opts: coredns,
			want: byCoreDNS, action: Replaced,
		},
		{
			name: "a kubernetes plugin without a block gets one",
			old:  noBrace, opts: coredns, action: Added,
			want: ".:53 {\n    " + KubernetesBeginMarker + ": managed by xcc-syncer patch-corefile; edits inside are overwritten; the line after this one is put back on removal\n" +
				"#|    kubernetes cluster.local\n    kubernetes cluster.local clusterset.local {\n        multicluster clusterset.local\n    }\n    " + KubernetesEndMarker + "\n" +
				"    forward . /etc/resolv.conf\n}\n\n" + blockFor,
		},
		{
			name: "a trailing comment is kept on the saved line",
			old:  strings.Replace(kubeadmCorefile, kubeadmKubernetesLine, "\tkubernetes cluster.local { # ours\n", 1), opts: coredns, action: Added,
			want: strings.Replace(kubeadmCorefile, kubeadmKubernetesLine, "\t"+KubernetesBeginMarker+": managed by xcc-syncer patch-corefile; edits inside are overwritten; the line after this one is put back on removal\n"+
				"#|\tkubernetes cluster.local { # ours\n\tkubernetes cluster.local clusterset.local {\n\t    multicluster clusterset.local\n\t"+KubernetesEndMarker+"\n", 1) + "\n" + blockFor,
		},
		{name: "an unknown server", old: kubeadmCorefile, opts: Options{ForwardTo: forwardTo, ClusterSetServer: "etcd"}, wantErr: `want "serve" or "coredns"`},
		{name: "no kubernetes plugin", old: ".:53 {\n    forward . /etc/resolv.conf\n}\n", opts: coredns, wantErr: "has no kubernetes plugin"},
		{name: "two kubernetes plugins", old: ".:53 {\n    kubernetes cluster.local\n    kubernetes other.local\n}\n", opts: coredns, wantErr: "2 kubernetes plugins"},
		{name: "kubernetes plugin without zones", old: ".:53 {\n    kubernetes {\n        pods insecure\n    }\n}\n", opts: coredns, wantErr: "names no zones"},
		{name: "a multicluster option of the user's", old: ".:53 {\n    kubernetes cluster.local mcs.example {\n        multicluster mcs.example\n    }\n}\n", opts: coredns, wantErr: "already has a multicluster option"},
		{name: "the clusterset zone among the user's zones", old: ".:53 {\n    kubernetes cluster.local Clusterset.Local. {\n    }\n}\n", opts: coredns, wantErr: "already answers clusterset.local"},
		{name: "a quoted zone", old: ".:53 {\n    kubernetes \"cluster.local\" {\n    }\n}\n", opts: coredns, wantErr: "quote"},
		{name: "a one-line server block", old: ".:53 { kubernetes cluster.local\n}\n", opts: coredns, wantErr: "does not start its line"},
		{name: "a brace on the next line", old: ".:53 {\n    kubernetes cluster.local\n    {\n        pods insecure\n    }\n}\n", opts: coredns, wantErr: "later line"},
		{name: "no server block gets the zone", old: "cluster.local:53 {\n    kubernetes cluster.local\n}\n", opts: coredns, wantErr: "no server block on port 53 gets clusterset.local"},
		{name: "another's clusterset block", old: kubeadmCorefile + "clusterset.local:53 {\n    forward . 10.0.0.54\n}\n", opts: coredns, wantErr: "already has a server block for clusterset.local"},
		{name: "a second begin marker", old: strings.Replace(byCoreDNS, kubernetesSpan, kubernetesSpan+kubernetesSpan, 1), opts: coredns, wantErr: "second"},
		{name: "begin marker without end", old: strings.Replace(byCoreDNS, "    "+KubernetesEndMarker+"\n", "", 1), opts: Options{Remove: true}, wantErr: "without"},
		{name: "saved line missing", old: strings.Replace(byCoreDNS, "#|"+kubeadmKubernetesLine, "", 1), opts: Options{Remove: true}, wantErr: "saved kubernetes line"},
		{name: "a saved line that breaks the Corefile", old: strings.Replace(byCoreDNS, "#|"+kubeadmKubernetesLine, "#|    kubernetes cluster.local }\n", 1), opts: Options{Remove: true}, wantErr: "Corefile"},
		{name: "a saved line reading the environment", old: strings.Replace(byCoreDNS, "#|"+kubeadmKubernetesLine, "#|    kubernetes {$HOME} {\n", 1), opts: Options{Remove: true}, wantErr: "environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, action, err := Patch(tt.old, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Patch error = %v, want one containing %q; text:\n%s", err, tt.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Patch: %v", err)
			}
			if got != tt.want {
				t.Errorf("Patch text:\n%s\nwant:\n%s", got, tt.want)
			}
			if action != tt.action {
				t.Errorf("Patch action = %q, want %q", action, tt.action)
			}
			again, action, err := Patch(got, tt.opts)
			if err != nil || again != got || action != Unchanged {
				t.Errorf("second Patch = %q, %v; want unchanged text, action %q", action, err, Unchanged)
			}
		})
	}
}

// TestRoundTripClusterSetByCoreDNS: add for coredns, then remove, gives
// every test Corefile back byte for byte; so does serve, coredns, serve.
func TestRoundTripClusterSetByCoreDNS(t *testing.T) {
	coredns := Options{ForwardTo: forwardTo, ClusterSetZone: DefaultClusterSetZone, ClusterSetServer: ClusterSetCoreDNS}
	serve := Options{ForwardTo: forwardTo, ClusterSetZone: DefaultClusterSetZone}
	for _, old := range []string{kubeadmCorefile, walkthroughCorefile, userBlocksCorefile + "\n"} {
		added, _, err := Patch(old, coredns)
		if err != nil {
			t.Fatalf("add to %q: %v", old, err)
		}
		removed, _, err := Patch(added, Options{Remove: true})
		if err != nil || removed != old {
			t.Errorf("add then remove gave %v:\n%q\nwant:\n%q", err, removed, old)
		}
		byServe, _, err := Patch(old, serve)
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
		back, _, err := Patch(added, serve)
		if err != nil || back != byServe {
			t.Errorf("coredns then serve gave %v:\n%q\nwant:\n%q", err, back, byServe)
		}
	}
}

// TestKeepClusterSetByCoreDNS: serve's keeper writes the kubernetes lines
// with the forward block, puts them back after an addon manager dropped
// them, and takes both out with the Service.
func TestKeepClusterSetByCoreDNS(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(corednsConfigMap(kubeadmCorefile), chartService("10.96.0.20", Finalizer))
	o := keepOpts()
	o.ClusterSetZone, o.ClusterSetServer = DefaultClusterSetZone, ClusterSetCoreDNS
	if a, err := Keep(ctx, client, o); err != nil || a != Added {
		t.Fatalf("first Keep: %s, %v; want %s", a, err, Added)
	}
	got := currentCorefile(t, client)
	if !strings.Contains(got, kubernetesSpan) || strings.Contains(got, "clusterset.local:53") {
		t.Fatalf("kept Corefile has not the kubernetes lines, or forwards the clusterset zone:\n%s", got)
	}
	// An addon manager puts kubeadm's Corefile back: all of it comes back.
	if _, err := client.CoreV1().ConfigMaps(DefaultNamespace).Update(ctx, corednsConfigMap(kubeadmCorefile), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, err := Keep(ctx, client, o); err != nil || a != Added || currentCorefile(t, client) != got {
		t.Errorf("Keep after the manager's Corefile: %s, %v, Corefile:\n%s", a, err, currentCorefile(t, client))
	}
	if err := client.CoreV1().Services("xcc-dns").Delete(ctx, "xcc-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, err := Keep(ctx, client, o); err != nil || a != Removed || currentCorefile(t, client) != kubeadmCorefile {
		t.Errorf("Keep with the Service gone: %s, %v, Corefile:\n%s", a, err, currentCorefile(t, client))
	}
}
