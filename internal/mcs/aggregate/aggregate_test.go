package aggregate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// t0 is the creation time of the oldest export of a case; at(n) is n
// seconds later.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func tcp(name string, port int32) Port { return Port{Name: name, Protocol: "TCP", Port: port} }

// svc is a ClusterIP Service with the given ports; edit changes it.
func svc(edit func(*Service), ports ...Port) *Service {
	s := &Service{Type: ServiceTypeClusterIP, ClusterIP: "10.0.0.1", Ports: ports}
	if edit != nil {
		edit(s)
	}
	return s
}

func headless(s *Service) { s.ClusterIP = ClusterIPNone }

func exp(cluster string, sec int, s *Service) Export {
	return Export{Cluster: cluster, Namespace: "shop", Name: "cart", Created: at(sec), Service: s}
}

// withMeta is e with exported labels and annotations.
func withMeta(e Export, labels, annotations map[string]string) Export {
	e.Labels, e.Annotations = labels, annotations
	return e
}

// importView is an import as one line: key, type, ports, global fields,
// winner and clusters.
func importView(i Import) string {
	var ports []string
	for _, p := range i.Ports {
		v := fmt.Sprintf("%s/%s/%d", p.Name, p.Protocol, p.Port)
		if p.AppProtocol != "" {
			v += "/" + p.AppProtocol
		}
		ports = append(ports, v)
	}
	v := fmt.Sprintf("%s/%s %s ports=%s sa=%s", i.Namespace, i.Name, i.Type, strings.Join(ports, ","), i.SessionAffinity)
	if i.SessionAffinityConfig != nil {
		v += fmt.Sprintf("(%ds)", i.SessionAffinityConfig.TimeoutSeconds)
	}
	v += " itp=" + i.InternalTrafficPolicy
	if i.TrafficDistribution != "" {
		v += " td=" + i.TrafficDistribution
	}
	if len(i.Labels) > 0 {
		v += " labels=" + pairs(i.Labels)
	}
	if len(i.Annotations) > 0 {
		v += " annotations=" + pairs(i.Annotations)
	}
	return v + fmt.Sprintf(" winner=%s clusters=%s", i.Winner, strings.Join(i.Clusters, ","))
}

func pairs(m map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, k+"="+m[k])
	}
	return strings.Join(kv, ",")
}

// exportView is an export's status as "<cluster> <ns>/<name>" and each
// condition as Type=Status/Reason, then the conflict's fields.
func exportView(s ExportStatus) string {
	v := fmt.Sprintf("%s %s/%s", s.Cluster, s.Namespace, s.Name)
	for _, c := range s.Conditions {
		v += fmt.Sprintf(" %s=%s/%s", c.Type, c.Status, c.Reason)
	}
	if len(s.ConflictFields) > 0 {
		v += " [" + names(s.ConflictFields) + "]"
	}
	return v
}

func views(r Result) (imports, exports []string) {
	for _, i := range r.Imports {
		imports = append(imports, importView(i))
	}
	for _, e := range r.Exports {
		exports = append(exports, exportView(e))
	}
	return imports, exports
}

const (
	validOK     = "Valid=True/Valid Conflict=False/NoConflicts Ready=True/Exported"
	validPrefix = "Valid=True/Valid Conflict=True/"
	ready       = " Ready=True/Exported"
)

// aggregateCase is one row of TestAggregate: exports in, each import
// (importView) and each export's status (exportView) out.
type aggregateCase struct {
	name    string
	exports []Export
	imports []string
	status  []string
}

// aggregateCases has a row for each rule of the package comment.
var aggregateCases = []aggregateCase{
	{
		name: "exported labels and annotations are the oldest export's; a difference is a conflict",
		exports: []Export{
			withMeta(exp("a", 0, svc(nil, tcp("http", 80))), map[string]string{"team": "a"}, map[string]string{"note": "a"}),
			withMeta(exp("b", 1, svc(nil, tcp("http", 80))), map[string]string{"team": "b"}, map[string]string{"note": "a"}),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster labels=team=a annotations=note=a winner=a clusters=a,b"},
		status: []string{
			"a shop/cart " + validPrefix + "LabelsConflict" + ready + " [exportedLabels]",
			"b shop/cart " + validPrefix + "LabelsConflict" + ready + " [exportedLabels]",
		},
	},
	{
		name: "annotations alone differ: AnnotationsConflict",
		exports: []Export{
			withMeta(exp("a", 0, svc(nil, tcp("http", 80))), nil, map[string]string{"note": "a"}),
			withMeta(exp("b", 1, svc(nil, tcp("http", 80))), nil, nil),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster annotations=note=a winner=a clusters=a,b"},
		status: []string{
			"a shop/cart " + validPrefix + "AnnotationsConflict" + ready + " [exportedAnnotations]",
			"b shop/cart " + validPrefix + "AnnotationsConflict" + ready + " [exportedAnnotations]",
		},
	},
	{
		name: "entries left out take no part in conflicts",
		exports: []Export{
			withMeta(exp("a", 0, svc(nil, tcp("http", 80))), map[string]string{"team": "a", "xcc-dns.io/owner": "a"}, nil),
			withMeta(exp("b", 1, svc(nil, tcp("http", 80))), map[string]string{"team": "a", "bad key": "b"}, map[string]string{"app.kubernetes.io/managed-by": "b"}),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster labels=team=a winner=a clusters=a,b"},
		status:  []string{"a shop/cart " + validOK, "b shop/cart " + validOK},
	},
	{
		name:    "one export is the import",
		exports: []Export{exp("a", 0, svc(nil, tcp("http", 80)))},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=a clusters=a"},
		status:  []string{"a shop/cart " + validOK},
	},
	{
		name: "oldest wins: global fields of the oldest, whatever the input order",
		exports: []Export{
			exp("b", 5, svc(func(s *Service) { s.SessionAffinity = SessionAffinityClientIP; s.TrafficDistribution = "PreferClose" }, tcp("http", 80))),
			exp("a", 0, svc(func(s *Service) { s.InternalTrafficPolicy = "Local" }, tcp("http", 80))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Local winner=a clusters=a,b"},
		status: []string{
			"a shop/cart " + validPrefix + "SessionAffinityConflict" + ready + " [sessionAffinity, sessionAffinityConfig, internalTrafficPolicy, trafficDistribution]",
			"b shop/cart " + validPrefix + "SessionAffinityConflict" + ready + " [sessionAffinity, sessionAffinityConfig, internalTrafficPolicy, trafficDistribution]",
		},
	},
	{
		name: "the oldest is not the first cluster id",
		exports: []Export{
			exp("a", 9, svc(func(s *Service) { s.SessionAffinity = SessionAffinityClientIP }, tcp("http", 80))),
			exp("z", 1, svc(nil, tcp("http", 80))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=z clusters=a,z"},
		status: []string{
			"a shop/cart " + validPrefix + "SessionAffinityConflict" + ready + " [sessionAffinity, sessionAffinityConfig]",
			"z shop/cart " + validPrefix + "SessionAffinityConflict" + ready + " [sessionAffinity, sessionAffinityConfig]",
		},
	},
	{
		name: "tie on creation time: the first cluster id wins",
		exports: []Export{
			exp("c", 0, svc(headless, tcp("http", 80))),
			exp("b", 0, svc(nil, tcp("http", 80))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=b clusters=b,c"},
		status: []string{
			"b shop/cart " + validPrefix + "TypeConflict" + ready + " [type]",
			"c shop/cart " + validPrefix + "TypeConflict" + ready + " [type]",
		},
	},
	{
		name: "type conflict: a headless oldest makes a Headless import",
		exports: []Export{
			exp("a", 0, svc(headless, tcp("db", 5432))),
			exp("b", 1, svc(nil, tcp("db", 5432))),
			exp("c", 2, svc(headless, tcp("db", 5432))),
		},
		imports: []string{"shop/cart Headless ports=db/TCP/5432 sa=None itp=Cluster winner=a clusters=a,b,c"},
		status: []string{
			"a shop/cart " + validPrefix + "TypeConflict" + ready + " [type]",
			"b shop/cart " + validPrefix + "TypeConflict" + ready + " [type]",
			"c shop/cart " + validPrefix + "TypeConflict" + ready + " [type]",
		},
	},
	{
		name: "headless everywhere: no conflict",
		exports: []Export{
			exp("a", 0, svc(headless, tcp("db", 5432))),
			exp("b", 1, svc(headless, tcp("db", 5432))),
		},
		imports: []string{"shop/cart Headless ports=db/TCP/5432 sa=None itp=Cluster winner=a clusters=a,b"},
		status:  []string{"a shop/cart " + validOK, "b shop/cart " + validOK},
	},
	{
		name: "port conflict on a name: the oldest's port is kept",
		exports: []Export{
			exp("a", 0, svc(nil, tcp("http", 80))),
			exp("b", 1, svc(nil, tcp("http", 8080))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=a clusters=a,b"},
		status: []string{
			"a shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
			"b shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
		},
	},
	{
		name: "port conflict on protocol and number under another name",
		exports: []Export{
			exp("a", 0, svc(nil, tcp("http", 80))),
			exp("b", 1, svc(nil, tcp("web", 80))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=a clusters=a,b"},
		status: []string{
			"a shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
			"b shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
		},
	},
	{
		name: "port conflict on appProtocol",
		exports: []Export{
			exp("a", 0, svc(nil, Port{Name: "grpc", Protocol: "TCP", Port: 9090, AppProtocol: "kubernetes.io/h2c"})),
			exp("b", 1, svc(nil, tcp("grpc", 9090))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=grpc/TCP/9090/kubernetes.io/h2c sa=None itp=Cluster winner=a clusters=a,b"},
		status: []string{
			"a shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
			"b shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
		},
	},
	{
		name: "port lists in another order and an empty protocol are no conflict",
		exports: []Export{
			exp("a", 0, svc(nil, tcp("http", 80), tcp("https", 443), Port{Name: "dns", Protocol: "UDP", Port: 53})),
			exp("b", 1, svc(nil, Port{Name: "dns", Protocol: "UDP", Port: 53}, Port{Name: "https", Port: 443}, tcp("http", 80))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=dns/UDP/53,http/TCP/80,https/TCP/443 sa=None itp=Cluster winner=a clusters=a,b"},
		status:  []string{"a shop/cart " + validOK, "b shop/cart " + validOK},
	},
	{
		name: "ports are the union: a port only a newer export declares is added, and both are in conflict",
		exports: []Export{
			exp("a", 0, svc(nil, tcp("http", 80))),
			exp("b", 1, svc(nil, tcp("http", 80), tcp("metrics", 9100))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80,metrics/TCP/9100 sa=None itp=Cluster winner=a clusters=a,b"},
		status: []string{
			"a shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
			"b shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
		},
	},
	{
		name: "a clash of the newest only: the middle export names it too",
		exports: []Export{
			exp("a", 0, svc(nil, tcp("http", 80))),
			exp("b", 1, svc(nil, tcp("http", 80))),
			exp("c", 2, svc(nil, tcp("http", 81), tcp("admin", 82))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=admin/TCP/82,http/TCP/80 sa=None itp=Cluster winner=a clusters=a,b,c"},
		status: []string{
			"a shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
			"b shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
			"c shop/cart " + validPrefix + "PortConflict" + ready + " [ports]",
		},
	},
	{
		name: "type and ports differ: reason of the first field, every field named",
		exports: []Export{
			exp("a", 0, svc(nil, tcp("http", 80))),
			exp("b", 1, svc(headless, tcp("http", 8080))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=a clusters=a,b"},
		status: []string{
			"a shop/cart " + validPrefix + "TypeConflict" + ready + " [type, ports]",
			"b shop/cart " + validPrefix + "TypeConflict" + ready + " [type, ports]",
		},
	},
	{
		name: "session affinity config: defaulted and explicit timeouts agree, others conflict",
		exports: []Export{
			exp("a", 0, svc(func(s *Service) { s.SessionAffinity = SessionAffinityClientIP }, tcp("http", 80))),
			exp("b", 1, svc(func(s *Service) {
				s.SessionAffinity = SessionAffinityClientIP
				s.SessionAffinityConfig = &SessionAffinityConfig{TimeoutSeconds: DefaultClientIPTimeoutSeconds}
			}, tcp("http", 80))),
			exp("c", 2, svc(func(s *Service) {
				s.SessionAffinity = SessionAffinityClientIP
				s.SessionAffinityConfig = &SessionAffinityConfig{TimeoutSeconds: 60}
			}, tcp("http", 80))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=ClientIP(10800s) itp=Cluster winner=a clusters=a,b,c"},
		status: []string{
			"a shop/cart " + validPrefix + "SessionAffinityConfigConflict" + ready + " [sessionAffinityConfig]",
			"b shop/cart " + validPrefix + "SessionAffinityConfigConflict" + ready + " [sessionAffinityConfig]",
			"c shop/cart " + validPrefix + "SessionAffinityConfigConflict" + ready + " [sessionAffinityConfig]",
		},
	},
	{
		name:    "ExternalName is invalid and makes no import",
		exports: []Export{exp("a", 0, svc(func(s *Service) { s.Type = ServiceTypeExternalName; s.ClusterIP = "" }, tcp("http", 80)))},
		status:  []string{"a shop/cart Valid=False/InvalidServiceType Conflict=False/NotValid Ready=False/NotValid"},
	},
	{
		name:    "a Service without ports is invalid",
		exports: []Export{exp("a", 0, svc(nil))},
		status:  []string{"a shop/cart Valid=False/NoServicePorts Conflict=False/NotValid Ready=False/NotValid"},
	},
	{
		name:    "an export without its Service is invalid",
		exports: []Export{exp("a", 0, nil)},
		status:  []string{"a shop/cart Valid=False/NoService Conflict=False/NotValid Ready=False/NotValid"},
	},
	{
		name: "an export past its member's limit is invalid, and the others' import stands",
		exports: []Export{
			func() Export { e := exp("a", 0, svc(nil, tcp("http", 80))); e.OverLimit = true; return e }(),
			exp("b", 1, svc(nil, tcp("http", 80))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=b clusters=b"},
		status: []string{
			"a shop/cart Valid=False/TooManyExports Conflict=False/NotValid Ready=False/NotValid",
			"b shop/cart " + validOK,
		},
	},
	{
		name: "an invalid oldest takes no part: the next valid wins, no conflict",
		exports: []Export{
			exp("a", 0, svc(func(s *Service) { s.Type = ServiceTypeExternalName }, tcp("http", 9))),
			exp("b", 1, svc(headless)),
			exp("c", 2, svc(nil, tcp("http", 80))),
			exp("d", 3, svc(nil, tcp("http", 80))),
		},
		imports: []string{"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=c clusters=c,d"},
		status: []string{
			"a shop/cart Valid=False/InvalidServiceType Conflict=False/NotValid Ready=False/NotValid",
			"b shop/cart Valid=False/NoServicePorts Conflict=False/NotValid Ready=False/NotValid",
			"c shop/cart " + validOK,
			"d shop/cart " + validOK,
		},
	},
	{
		name: "unexport of the oldest (it is gone from the input): the next oldest wins",
		exports: []Export{
			exp("b", 1, svc(headless, tcp("http", 8080))),
			exp("c", 2, svc(nil, tcp("http", 80))),
		},
		imports: []string{"shop/cart Headless ports=http/TCP/8080 sa=None itp=Cluster winner=b clusters=b,c"},
		status: []string{
			"b shop/cart " + validPrefix + "TypeConflict" + ready + " [type, ports]",
			"c shop/cart " + validPrefix + "TypeConflict" + ready + " [type, ports]",
		},
	},
	{
		name: "many namespaces: one import each, sorted; same name elsewhere is another service",
		exports: []Export{
			{Cluster: "b", Namespace: "web", Name: "cart", Created: at(0), Service: svc(headless, tcp("http", 80))},
			{Cluster: "a", Namespace: "shop", Name: "cart", Created: at(5), Service: svc(nil, tcp("http", 80))},
			{Cluster: "a", Namespace: "web", Name: "api", Created: at(1), Service: svc(nil, tcp("grpc", 9090))},
			{Cluster: "a", Namespace: "web", Name: "cart", Created: at(1), Service: svc(headless, tcp("http", 80))},
			{Cluster: "c", Namespace: "ops", Name: "old", Created: at(1), Service: svc(func(s *Service) { s.Type = ServiceTypeExternalName })},
		},
		imports: []string{
			"shop/cart ClusterSetIP ports=http/TCP/80 sa=None itp=Cluster winner=a clusters=a",
			"web/api ClusterSetIP ports=grpc/TCP/9090 sa=None itp=Cluster winner=a clusters=a",
			"web/cart Headless ports=http/TCP/80 sa=None itp=Cluster winner=b clusters=a,b",
		},
		status: []string{
			"c ops/old Valid=False/InvalidServiceType Conflict=False/NotValid Ready=False/NotValid",
			"a shop/cart " + validOK,
			"a web/api " + validOK,
			"a web/cart " + validOK,
			"b web/cart " + validOK,
		},
	},
}

func TestAggregate(t *testing.T) {
	for _, tt := range aggregateCases {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Aggregate(tt.exports)
			if err != nil {
				t.Fatal(err)
			}
			imports, status := views(r)
			if !slices.Equal(imports, tt.imports) {
				t.Errorf("imports:\n got %q\nwant %q", imports, tt.imports)
			}
			if !slices.Equal(status, tt.status) {
				t.Errorf("status:\n got %q\nwant %q", status, tt.status)
			}
		})
	}
}

func TestAggregateRefusesBrokenInput(t *testing.T) {
	cases := []struct {
		name    string
		exports []Export
		want    error
	}{
		{"no cluster id", []Export{{Namespace: "shop", Name: "cart"}}, ErrIncompleteExport},
		{"no namespace", []Export{{Cluster: "a", Name: "cart"}}, ErrIncompleteExport},
		{"twice in one cluster", []Export{exp("a", 0, nil), exp("a", 1, nil)}, ErrDuplicateExport},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Aggregate(tt.exports); !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
		})
	}
}

// TestConflictMessagesNameTheWinner: a message names the cluster whose
// values the import uses, and the one of the winner names the losers.
func TestConflictMessagesNameTheWinner(t *testing.T) {
	r, err := Aggregate([]Export{exp("a", 0, svc(nil, tcp("http", 80))), exp("b", 1, svc(nil, tcp("http", 81)))})
	if err != nil {
		t.Fatal(err)
	}
	a, b := r.Exports[0].Conditions[1].Message, r.Exports[1].Conditions[1].Message
	if !strings.Contains(a, "cluster(s) b") || !strings.Contains(a, "cluster a") {
		t.Errorf("winner's message %q names neither the loser b nor the winner a", a)
	}
	if !strings.Contains(b, "of this export") || !strings.Contains(b, "cluster a") {
		t.Errorf("loser's message %q does not say its own ports lost to cluster a", b)
	}
}

// TestAggregateDoesNotChangeItsInput: normalize works on copies, so the
// caller's Services (informer cache objects, later) are not written.
func TestAggregateDoesNotChangeItsInput(t *testing.T) {
	s := &Service{Type: ServiceTypeClusterIP, Ports: []Port{{Name: "http", Port: 80}}}
	if _, err := Aggregate([]Export{exp("a", 0, s)}); err != nil {
		t.Fatal(err)
	}
	if s.Ports[0].Protocol != "" || s.SessionAffinity != "" || s.InternalTrafficPolicy != "" {
		t.Errorf("input changed: %+v", s)
	}
}

// TestPortOrderOfOneServiceDoesNotMatter: even ports that clash inside
// one Service (which the API server refuses) merge the same whatever
// their order, so no input makes the output depend on a list's order.
func TestPortOrderOfOneServiceDoesNotMatter(t *testing.T) {
	clashing := []Port{tcp("http", 80), tcp("web", 80), tcp("http", 8080)}
	var want []string
	for i := range len(clashing) {
		ports := append(slices.Clone(clashing[i:]), clashing[:i]...)
		r, err := Aggregate([]Export{exp("a", 0, svc(nil, ports...))})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := views(r)
		if i == 0 {
			want = got
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("ports %v: import %q, want %q as for %v", ports, got, want, clashing)
		}
	}
}

// TestUnexportOfTheOldest: while the oldest export is there its values
// are the import's; once it is unexported (gone from the input) the next
// oldest valid one wins and the import stays.
func TestUnexportOfTheOldest(t *testing.T) {
	a := exp("a", 0, svc(nil, tcp("http", 80)))
	b := exp("b", 1, svc(headless, tcp("http", 80)))
	c := exp("c", 2, svc(nil, tcp("http", 80)))
	for _, step := range []struct {
		exports []Export
		winner  string
		typ     ImportType
	}{
		{[]Export{a, b, c}, "a", ImportClusterSetIP},
		{[]Export{b, c}, "b", ImportHeadless},
		{[]Export{c}, "c", ImportClusterSetIP},
	} {
		r, err := Aggregate(step.exports)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Imports) != 1 || r.Imports[0].Winner != step.winner || r.Imports[0].Type != step.typ {
			t.Errorf("%d exports: imports %+v, want one of %s won by %s", len(step.exports), r.Imports, step.typ, step.winner)
		}
	}
	if r, err := Aggregate(nil); err != nil || len(r.Imports)+len(r.Exports) != 0 {
		t.Errorf("no exports: %+v, %v; want nothing", r, err)
	}
}

// TestExportedMetadataLeftOut: what a tenant writes in exportedLabels and
// exportedAnnotations is checked entry by entry; an entry that could not
// be written or takes a reserved key is left out and named in the Valid
// message, and the others are still exported.
func TestExportedMetadataLeftOut(t *testing.T) {
	many := map[string]string{}
	for i := range MaxExportedEntries + 2 {
		many[fmt.Sprintf("k%02d", i)] = "v"
	}
	cases := []struct {
		name     string
		labels   bool
		in       map[string]string
		keep     []string
		messages []string
	}{
		{"valid label", true, map[string]string{"team": "shop", "example.com/tier": "web"}, []string{"example.com/tier", "team"}, nil},
		{"not a key", true, map[string]string{"bad key": "v", "ok": "v"}, []string{"ok"}, []string{`exportedLabels "bad key" left out: not a valid key`}},
		{"not a label value", true, map[string]string{"k": "has space", "ok": "v"}, []string{"ok"}, []string{`"k" left out: not a valid label value`}},
		{"any value of an annotation", false, map[string]string{"note": "has space / and more"}, []string{"note"}, nil},
		{"reserved domain", true, map[string]string{"xcc-dns.io/record": "x", "a.xcc-dns.io/x": "y", "multicluster.kubernetes.io/service-name": "other"}, nil,
			[]string{`"a.xcc-dns.io/x" left out: reserved`, `"multicluster.kubernetes.io/service-name" left out: reserved`, `"xcc-dns.io/record" left out: reserved`}},
		{"managed-by", false, map[string]string{"app.kubernetes.io/managed-by": "me", "app.kubernetes.io/name": "cart"}, []string{"app.kubernetes.io/name"}, []string{"managed-by\" left out: reserved"}},
		{"a domain that only ends like a reserved one", true, map[string]string{"notxcc-dns.io/x": "y"}, []string{"notxcc-dns.io/x"}, nil},
		{"too many entries: the first in key order are kept", true, many, slices.Sorted(maps.Keys(many))[:MaxExportedEntries],
			[]string{`"k32" left out: more than 32 entries`, `"k33" left out: more than 32 entries`}},
		{"too many bytes", false, map[string]string{"a": strings.Repeat("x", MaxExportedAnnotationBytes-1), "b": "y"}, []string{"a"},
			[]string{`"b" left out: more than`}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := exp("a", 0, svc(nil, tcp("http", 80)))
			if tt.labels {
				e.Labels = tt.in
			} else {
				e.Annotations = tt.in
			}
			r, err := Aggregate([]Export{e})
			if err != nil {
				t.Fatal(err)
			}
			got := r.Imports[0].Annotations
			if tt.labels {
				got = r.Imports[0].Labels
			}
			if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, tt.keep) {
				t.Errorf("kept %q, want %q", keys, tt.keep)
			}
			valid := r.Exports[0].Conditions[0]
			if valid.Status != StatusTrue {
				t.Errorf("Valid %s: entries left out must not refuse the export", valid.Status)
			}
			for _, m := range tt.messages {
				if !strings.Contains(valid.Message, m) {
					t.Errorf("Valid message %q does not say %q", valid.Message, m)
				}
			}
			if len(tt.messages) == 0 && valid.Message != "the Service can be exported" {
				t.Errorf("Valid message %q names entries left out", valid.Message)
			}
		})
	}
}

// TestPrecedenceIsBoundBySeen: precedence takes an export's creation time
// as its member reports it only as far back as Seen, the earliest time
// the controller vouches for: a member claiming 1970 for an export the
// controller first saw after another does not win, nor does it get the
// oldest place in the import's Created (the caps in other members keep
// the oldest) or in its own member's limit (Admit).
func TestPrecedenceIsBoundBySeen(t *testing.T) {
	epoch := time.Unix(0, 0).UTC()
	honest := exp("b", 10, svc(nil, tcp("http", 80)))
	honest.Seen = at(5) // seen in the controller's first read: its own time counts
	forged := exp("a", 0, svc(headless, tcp("http", 80)))
	forged.Created, forged.Seen = epoch, at(60) // first seen a minute later
	for _, tc := range []struct {
		name    string
		exports []Export
		winner  string
		since   time.Time
	}{
		{"a forged 1970 loses to an export seen first", []Export{forged, honest}, "b", at(60)},
		{"without Seen the reported time counts", []Export{{Cluster: "a", Namespace: "shop", Name: "cart", Created: epoch,
			Service: svc(headless, tcp("http", 80))}, honest}, "a", epoch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Aggregate(tc.exports)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Imports) != 1 || r.Imports[0].Winner != tc.winner {
				t.Fatalf("imports %+v: want one won by %s", r.Imports, tc.winner)
			}
			if got := r.Imports[0].Created["a"]; !got.Equal(tc.since) {
				t.Errorf("Created[a] = %v, want %v", got, tc.since)
			}
		})
	}
	if s := forged.Since(); !s.Equal(at(60)) {
		t.Errorf("Since() = %v, want the time first seen", s)
	}
	future := exp("a", 3600, nil)
	future.Seen = at(60)
	if s := future.Since(); !s.Equal(at(3600)) {
		t.Errorf("a future creation time: Since() = %v, want it kept (it only makes the export younger)", s)
	}

	// Admit: of one member's exports the one seen first is admitted.
	ok := svc(nil, tcp("http", 80))
	old := Export{Cluster: "a", Namespace: "shop", Name: "old", Created: at(10), Seen: at(5), Service: ok}
	claim := Export{Cluster: "a", Namespace: "shop", Name: "claim", Created: epoch, Seen: at(60), Service: ok}
	if got := admitted(t, []Export{claim, old}, 1); !slices.Equal(got, []string{"shop/old"}) {
		t.Errorf("admitted %v, want the export seen first", got)
	}
}
