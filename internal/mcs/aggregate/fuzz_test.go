package aggregate

import (
	"maps"
	"reflect"
	"slices"
	"testing"
)

// fuzzExports decodes bytes into exports from a small alphabet of
// clusters, names, times, types and ports, so that collisions (same
// name, same instant, clashing ports) are common. A (cluster, key) seen
// before is skipped: the controller never sees one twice.
func fuzzExports(data []byte) []Export {
	clusters := []string{"a", "b", "c", "d"}
	namespaces := []string{"shop", "web"}
	portNames := []string{"http", "https", ""}
	numbers := []int32{80, 81, 443}
	protocols := []string{"TCP", "UDP", ""}
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	seen := map[string]bool{}
	var out []Export
	for len(data) > 0 {
		e := Export{Cluster: clusters[next()%4], Namespace: namespaces[next()%2], Name: "svc", Created: at(next() % 3)}
		switch kind := next() % 5; kind {
		case 0:
		default:
			s := &Service{Type: []ServiceType{ServiceTypeExternalName, ServiceTypeClusterIP, ServiceTypeClusterIP, ServiceTypeLoadBalancer}[kind-1]}
			if kind == 3 {
				s.ClusterIP = ClusterIPNone
			}
			flags := next()
			if flags&1 != 0 {
				s.SessionAffinity = SessionAffinityClientIP
			}
			if flags&2 != 0 {
				s.TrafficDistribution = "PreferClose"
			}
			for range next() % 4 {
				b := next()
				s.Ports = appendValidPort(s.Ports, Port{Name: portNames[b%3], Port: numbers[(b/3)%3], Protocol: protocols[(b/9)%3]})
			}
			e.Service = s
		}
		// Exported metadata: some agree, some differ, some are refused.
		meta := next()
		if meta&1 != 0 {
			e.Labels = map[string]string{"team": []string{"a", "b"}[(meta>>1)&1]}
		}
		if meta&4 != 0 {
			e.Labels = map[string]string{"xcc-dns.io/x": "y", "bad key!": "v"}
		}
		if meta&8 != 0 {
			e.Annotations = map[string]string{"note": "x"}
		}
		id := e.Cluster + "/" + e.Namespace
		if !seen[id] {
			seen[id] = true
			out = append(out, e)
		}
	}
	return out
}

// appendValidPort appends p unless the API server would refuse the
// Service with it: two ports of one name or of one protocol and number,
// or an unnamed port beside another.
func appendValidPort(ports []Port, p Port) []Port {
	n := normalize(Export{Service: &Service{Ports: []Port{p}}}).Service.Ports[0]
	for _, q := range ports {
		q = normalize(Export{Service: &Service{Ports: []Port{q}}}).Service.Ports[0]
		if q.Name == n.Name || q.Name == "" || n.Name == "" || (q.Protocol == n.Protocol && q.Port == n.Port) {
			return ports
		}
	}
	return append(ports, p)
}

func FuzzAggregate(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 0, 3, 1, 0, 0, 2, 0, 2, 9})
	f.Add([]byte{0, 0, 0, 3, 1, 1, 4, 1, 0, 0, 1, 1, 1, 2, 5, 2, 1, 0, 0, 4, 0, 3, 0, 1, 2})
	f.Add([]byte{2, 1, 2, 1, 0, 1, 1, 1, 2, 2, 0, 2, 7, 9, 3, 0, 2, 4, 3, 3, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		exports := fuzzExports(data)
		r, err := Aggregate(exports)
		if err != nil {
			t.Fatal(err)
		}
		checkImports(t, exports, r)
		checkStatuses(t, exports, r)
		reversed := slices.Clone(exports)
		slices.Reverse(reversed)
		if again, err := Aggregate(reversed); err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("input order changed the output (err %v):\n%+v\n%+v", err, r, again)
		}
	})
}

// checkImports: one import per key with a valid export, none for the
// others; its winner is the oldest valid export (cluster id on a tie),
// its global fields are the winner's, its ports have no two of one name
// and no two of one protocol and number.
func checkImports(t *testing.T, exports []Export, r Result) {
	t.Helper()
	winners := map[Key]Export{}
	for _, e := range exports {
		e = normalize(e)
		if reason, _ := validity(e); reason != ReasonValid {
			continue
		}
		if w, ok := winners[e.key()]; !ok || comparePrecedence(e, w) < 0 {
			winners[e.key()] = e
		}
	}
	if len(r.Imports) != len(winners) {
		t.Fatalf("%d imports, want one per key with a valid export: %d", len(r.Imports), len(winners))
	}
	for _, imp := range r.Imports {
		w, ok := winners[imp.Key]
		if !ok {
			t.Fatalf("import %v has no valid export", imp.Key)
		}
		if imp.Winner != w.Cluster || imp.Type != importType(w.Service) || imp.SessionAffinity != w.Service.SessionAffinity ||
			imp.TrafficDistribution != w.Service.TrafficDistribution || imp.InternalTrafficPolicy != w.Service.InternalTrafficPolicy ||
			!sameAffinityConfig(imp.SessionAffinityConfig, w.Service.SessionAffinityConfig) ||
			!maps.Equal(imp.Labels, w.Labels) || !maps.Equal(imp.Annotations, w.Annotations) {
			t.Fatalf("import %+v, want the fields of the oldest valid export %+v", imp, w)
		}
		names := map[string]bool{}
		numbers := map[protocolPort]bool{}
		for _, p := range imp.Ports {
			if n := (protocolPort{p.Protocol, p.Port}); names[p.Name] || numbers[n] {
				t.Fatalf("import %v has two ports of name %q or of %v: %+v", imp.Key, p.Name, n, imp.Ports)
			}
			names[p.Name], numbers[protocolPort{p.Protocol, p.Port}] = true, true
		}
		// Each cluster serves the import's ports its Service has alike,
		// the winner all of its own.
		for _, c := range imp.Clusters {
			for _, p := range imp.Served[c] {
				if !slices.Contains(imp.Ports, p) {
					t.Fatalf("import %v: cluster %s serves %+v, not a port of the import", imp.Key, c, p)
				}
			}
		}
		if len(imp.Served[w.Cluster]) != len(w.Service.Ports) {
			t.Fatalf("import %v: the winner serves %+v of its ports %+v", imp.Key, imp.Served[w.Cluster], w.Service.Ports)
		}
		for k := range imp.Labels {
			if Reserved(k) {
				t.Fatalf("import %v carries reserved label %q", imp.Key, k)
			}
		}
		// The API server gives a Service no two ports of one name or
		// number, so the winner's ports are all in the import.
		for _, p := range w.Service.Ports {
			if !slices.Contains(imp.Ports, p) {
				t.Fatalf("import %v lacks port %+v of the winner", imp.Key, p)
			}
		}
	}
}

// checkStatuses: one status per export; Valid, Conflict, Ready in that
// order; Conflict True exactly when fields are named, and then on every
// valid export of the key; Ready True exactly when Valid is.
func checkStatuses(t *testing.T, exports []Export, r Result) {
	t.Helper()
	if len(r.Exports) != len(exports) {
		t.Fatalf("%d statuses for %d exports", len(r.Exports), len(exports))
	}
	conflicted := map[Key]bool{}
	for _, s := range r.Exports {
		c := s.Conditions
		if len(c) != 3 || c[0].Type != ConditionValid || c[1].Type != ConditionConflict || c[2].Type != ConditionReady {
			t.Fatalf("conditions of %s %v: %+v", s.Cluster, s.Key, c)
		}
		if (c[1].Status == StatusTrue) != (len(s.ConflictFields) > 0) || c[0].Status != c[2].Status {
			t.Fatalf("conditions of %s %v disagree: %+v %v", s.Cluster, s.Key, c, s.ConflictFields)
		}
		if c[1].Status == StatusTrue {
			conflicted[s.Key] = true
		}
	}
	for _, s := range r.Exports {
		if s.Conditions[0].Status == StatusTrue && conflicted[s.Key] != (s.Conditions[1].Status == StatusTrue) {
			t.Fatalf("%s %v: Conflict %s while another export of it conflicts", s.Cluster, s.Key, s.Conditions[1].Status)
		}
	}
}
