package corefile

import (
	"strings"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// kubeadmCorefile is the Corefile kubeadm installs in kube-system/coredns.
var kubeadmCorefile = testfixture.KubeadmCorefile

// walkthroughCorefile is the Corefile of the original walkthrough's patch
// step, before its hand-written xcc.test block: an older kubeadm default,
// kubeadm's without the options of forward and cache.
var walkthroughCorefile = strings.NewReplacer(
	"forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n", "forward . /etc/resolv.conf\n",
	"cache 30 {\n       disable success cluster.local\n       disable denial cluster.local\n    }\n", "cache 30\n",
).Replace(kubeadmCorefile)

// userBlocksCorefile has the user's own stub domain and a comment after
// the main block, and no final newline.
const userBlocksCorefile = `# cluster DNS, edited by the platform team
corp.example:53 {
    errors
    cache 30
    forward . 10.0.0.53 10.0.1.53
}

.:53 {
    errors
    health
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
    }
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30
    reload
}
# keep this comment`

const forwardTo = "10.96.0.20:53"

// blockFor is the block Patch writes for the default zone and forwardTo.
const blockFor = `# xcc-dns begin: managed by xcc-syncer patch-corefile; edits inside are overwritten
xcc.test:53 {
    errors
    cache 30
    forward . 10.96.0.20:53
}
# xcc-dns end
`

// reverseBlock is the block Patch writes for the default zone, forwardTo
// and the reverse CIDRs 192.0.2.0/24 and 2001:db8::/32.
const reverseBlock = `# xcc-dns begin: managed by xcc-syncer patch-corefile; edits inside are overwritten
xcc.test:53 192.0.2.0/24:53 2001:db8::/32:53 {
    errors
    cache 30
    forward . 10.96.0.20:53
}
# xcc-dns end
`

// TestPatch patches Corefiles as kubeadm and others ship them and checks
// the result. It is long for its table, one row per Corefile, and one loop.
func TestPatch(t *testing.T) {
	if strings.Contains(walkthroughCorefile, "max_concurrent") || strings.Contains(walkthroughCorefile, "disable") {
		t.Fatalf("walkthroughCorefile still has kubeadm's options:\n%s", walkthroughCorefile)
	}
	add := Options{ForwardTo: forwardTo}
	reverse := cidr.MustParse("192.0.2.0/24,2001:db8::/32")
	patchedKubeadm := kubeadmCorefile + "\n" + blockFor
	tests := []struct {
		name    string
		old     string
		opts    Options
		want    string
		action  Action
		wantErr string
	}{
		{name: "kubeadm default: block appended after a blank line", old: kubeadmCorefile, opts: add, want: patchedKubeadm, action: Added},
		{name: "walkthrough Corefile", old: walkthroughCorefile, opts: add, want: walkthroughCorefile + "\n" + blockFor, action: Added},
		{name: "user's own blocks and no final newline", old: userBlocksCorefile, opts: add, want: userBlocksCorefile + "\n\n" + blockFor, action: Added},
		{name: "already patched: nothing to do", old: patchedKubeadm, opts: add, want: patchedKubeadm, action: Unchanged},
		{
			name: "new forward address replaces the block in place",
			old:  patchedKubeadm + "# after\n",
			opts: Options{ForwardTo: "10.96.7.7"},
			want: kubeadmCorefile + "\n" + strings.Replace(blockFor, "10.96.0.20:53", "10.96.7.7", 1) + "# after\n", action: Replaced,
		},
		{
			name: "IPv6 forward address",
			old:  kubeadmCorefile, opts: Options{ForwardTo: "[fd00:10:96::20]:53"},
			want: kubeadmCorefile + "\n" + strings.Replace(blockFor, "10.96.0.20:53", "[fd00:10:96::20]:53", 1), action: Added,
		},
		{
			name: "other zone",
			old:  kubeadmCorefile, opts: Options{ForwardTo: forwardTo, Zone: "XCC.Example."},
			want: kubeadmCorefile + "\n" + strings.Replace(blockFor, "xcc.test:53", "xcc.example:53", 1), action: Added,
		},
		{name: "remove gives the original back", old: patchedKubeadm, opts: Options{Remove: true}, want: kubeadmCorefile, action: Removed},
		{name: "remove without a block", old: kubeadmCorefile, opts: Options{Remove: true}, want: kubeadmCorefile, action: Unchanged},
		{
			name: "remove keeps text after the block",
			old:  userBlocksCorefile + "\n\n" + blockFor + "# tail\n",
			opts: Options{Remove: true}, want: userBlocksCorefile + "\n# tail\n", action: Removed,
		},
		{name: "empty Corefile", old: "", opts: add, want: blockFor, action: Added},
		{
			name: "plugins this CoreDNS build does not know are kept when already in use",
			old:  ".:53 {\n    kubernetai cluster.local\n    forward . /etc/resolv.conf\n}\n",
			opts: add, want: ".:53 {\n    kubernetai cluster.local\n    forward . /etc/resolv.conf\n}\n\n" + blockFor, action: Added,
		},
		{name: "broken brace refused", old: strings.Replace(kubeadmCorefile, "    loadbalance\n}\n", "    loadbalance\n", 1), opts: add, wantErr: "Corefile"},
		{name: "extra closing brace refused", old: kubeadmCorefile + "}\n", opts: add, wantErr: "Corefile"},
		{name: "nested brace left open refused", old: strings.Replace(kubeadmCorefile, "       ttl 30\n    }\n", "       ttl 30\n", 1), opts: add, wantErr: "Corefile"},
		{name: "hand-written zone block refused", old: walkthroughCorefile + "xcc.test {\n    forward . 10.96.0.20\n    reload\n}\n", opts: add, wantErr: "already has a server block for xcc.test"},
		{name: "hand-written zone block with dns:// and a dot refused", old: walkthroughCorefile + "dns://XCC.test.:53 {\n    forward . 10.96.0.20\n}\n", opts: add, wantErr: "already has a server block"},
		{name: "zone on another port is not ours", old: walkthroughCorefile + "xcc.test:1053 {\n    forward . 10.96.0.20\n}\n", opts: add, want: walkthroughCorefile + "xcc.test:1053 {\n    forward . 10.96.0.20\n}\n\n" + blockFor, action: Added},
		{name: "begin marker without end", old: kubeadmCorefile + BeginMarker + "\n", opts: add, wantErr: "without"},
		{name: "end marker without begin", old: kubeadmCorefile + EndMarker + "\n", opts: Options{Remove: true}, wantErr: "without"},
		{name: "two blocks", old: patchedKubeadm + blockFor, opts: add, wantErr: "second"},
		{name: "forward address missing", old: kubeadmCorefile, opts: Options{}, wantErr: "no address"},
		{name: "forward address is a name", old: kubeadmCorefile, opts: Options{ForwardTo: "xcc-dns.xcc-dns.svc"}, wantErr: "not ip"},
		{name: "forward address with a brace", old: kubeadmCorefile, opts: Options{ForwardTo: "10.0.0.1 }"}, wantErr: "not ip"},
		{name: "zone that would break the Corefile", old: kubeadmCorefile, opts: Options{ForwardTo: forwardTo, Zone: "xcc.test {"}, wantErr: "not a domain name"},
		{name: "zone with a port", old: kubeadmCorefile, opts: Options{ForwardTo: forwardTo, Zone: "xcc.test:53"}, wantErr: "not a domain name"},
		{
			name: "reverse CIDRs are forwarded by the same block",
			old:  kubeadmCorefile, opts: Options{ForwardTo: forwardTo, ReverseCIDRs: reverse},
			want: kubeadmCorefile + "\n" + reverseBlock, action: Added,
		},
		{
			name: "reverse CIDRs added to a patched Corefile replace the block",
			old:  patchedKubeadm, opts: Options{ForwardTo: forwardTo, ReverseCIDRs: reverse},
			want: kubeadmCorefile + "\n" + reverseBlock, action: Replaced,
		},
		{
			name: "reverse CIDRs dropped again",
			old:  kubeadmCorefile + "\n" + reverseBlock, opts: add,
			want: patchedKubeadm, action: Replaced,
		},
		{
			name: "a reverse zone the user serves already is refused",
			old:  kubeadmCorefile + "2.0.192.in-addr.arpa:53 {\n    forward . 10.0.0.53\n}\n", opts: Options{ForwardTo: forwardTo, ReverseCIDRs: reverse},
			wantErr: "already has a server block for 2.0.192.in-addr.arpa",
		},
		{
			name: "a reverse zone the user serves already is refused when replacing too",
			old:  patchedKubeadm + "1.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa:53 {\n    forward . 10.0.0.53\n}\n", opts: Options{ForwardTo: forwardTo, ReverseCIDRs: cidr.MustParse("2001:db8:0:1::/64")},
			wantErr: "already has a server block for 1.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa",
		},
		{
			name: "a wider reverse zone of the user's, or the kubernetes plugin's in-addr.arpa, is no clash",
			old:  kubeadmCorefile + "192.in-addr.arpa:53 {\n    forward . 10.0.0.53\n}\n", opts: Options{ForwardTo: forwardTo, ReverseCIDRs: reverse},
			want: kubeadmCorefile + "192.in-addr.arpa:53 {\n    forward . 10.0.0.53\n}\n\n" + reverseBlock, action: Added,
		},
		{
			name: "the clusterset zone is one more key of the block",
			old:  kubeadmCorefile, opts: Options{ForwardTo: forwardTo, ClusterSetZone: "clusterset.local", ReverseCIDRs: reverse},
			want: kubeadmCorefile + "\n" + strings.Replace(reverseBlock, "xcc.test:53 ", "xcc.test:53 clusterset.local:53 ", 1), action: Added,
		},
		{
			name: "the clusterset zone added to a patched Corefile replaces the block",
			old:  patchedKubeadm, opts: Options{ForwardTo: forwardTo, ClusterSetZone: "ClusterSet.Local."},
			want: kubeadmCorefile + "\n" + strings.Replace(blockFor, "xcc.test:53 ", "xcc.test:53 clusterset.local:53 ", 1), action: Replaced,
		},
		{
			name: "the clusterset zone dropped again",
			old:  kubeadmCorefile + "\n" + strings.Replace(blockFor, "xcc.test:53 ", "xcc.test:53 clusterset.local:53 ", 1), opts: add,
			want: patchedKubeadm, action: Replaced,
		},
		{
			name: "a clusterset zone another MCS implementation serves is refused",
			old:  kubeadmCorefile + "clusterset.local:53 {\n    forward . 10.0.0.54\n}\n", opts: Options{ForwardTo: forwardTo, ClusterSetZone: "clusterset.local"},
			wantErr: "already has a server block for clusterset.local",
		},
		{
			name: "without the clusterset zone another's block is no clash",
			old:  kubeadmCorefile + "clusterset.local:53 {\n    forward . 10.0.0.54\n}\n", opts: add,
			want: kubeadmCorefile + "clusterset.local:53 {\n    forward . 10.0.0.54\n}\n\n" + blockFor, action: Added,
		},
		{name: "a clusterset zone that would break the Corefile", old: kubeadmCorefile, opts: Options{ForwardTo: forwardTo, ClusterSetZone: "x {"}, wantErr: "not a domain name"},
		{name: "a reverse CIDR CoreDNS refuses as a key", old: kubeadmCorefile, opts: Options{ForwardTo: forwardTo, ReverseCIDRs: cidr.MustParse("::/0")}, wantErr: "invalid CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, action, err := Patch(tt.old, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Patch error = %v, want one containing %q; text:\n%s", err, tt.wantErr, got)
				}
				if got != "" {
					t.Errorf("Patch returned text with an error:\n%s", got)
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
			// Whatever Patch writes, CoreDNS's parser accepts, and a
			// second identical run changes nothing.
			if err := Validate(got, tt.old); err != nil {
				t.Errorf("Validate(result): %v", err)
			}
			again, action, err := Patch(got, tt.opts)
			if err != nil || again != got || action != Unchanged {
				t.Errorf("second Patch = %q, %v; want unchanged text, action %q", action, err, Unchanged)
			}
		})
	}
}

// TestRoundTrip: add then remove gives every test Corefile back byte for
// byte (those that end in a newline, as ConfigMaps written by kubeadm and
// by `kubectl edit` do).
func TestRoundTrip(t *testing.T) {
	for _, old := range []string{kubeadmCorefile, walkthroughCorefile, userBlocksCorefile + "\n", "", "\n\n"} {
		added, _, err := Patch(old, Options{ForwardTo: forwardTo})
		if err != nil {
			t.Fatalf("add to %q: %v", old, err)
		}
		removed, _, err := Patch(added, Options{Remove: true})
		if err != nil {
			t.Fatalf("remove from %q: %v", added, err)
		}
		if removed != old {
			t.Errorf("add then remove gave:\n%q\nwant:\n%q", removed, old)
		}
	}
}

func TestValidateRejectsUnknownDirective(t *testing.T) {
	bad := kubeadmCorefile + "\nxcc.test:53 {\n    forwardd . 10.0.0.1\n}\n"
	if err := Validate(bad, kubeadmCorefile); err == nil || !strings.Contains(err.Error(), "forwardd") {
		t.Errorf("Validate with a misspelt directive: %v, want an error naming it", err)
	}
	if err := Validate(kubeadmCorefile, kubeadmCorefile); err != nil {
		t.Errorf("Validate(kubeadm default): %v", err)
	}
}
