package apply

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

var (
	t0   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	then = metav1.NewTime(t0)
	now  = metav1.NewTime(t0.Add(time.Hour))
)

// desiredOf computes member a's objects for exports of shop/<name> in
// clusters a and b, each with endpoints 10.<n>.0.1, once the derived
// Services have their ClusterIP.
func desiredOf(t *testing.T, written bool, names ...string) objects.Objects {
	t.Helper()
	return desiredWith(t, written, []string{"10.96.0.10"}, names...)
}

// pendingOf is desiredOf before the derived Services have a ClusterIP.
func pendingOf(t *testing.T, names ...string) objects.Objects {
	t.Helper()
	return desiredWith(t, true, nil, names...)
}

func desiredWith(t *testing.T, written bool, clusterIPs []string, names ...string) objects.Objects {
	t.Helper()
	return objects.Compute(inputWith(t, written, clusterIPs, names...))
}

// inputWith is what desiredWith computes from.
func inputWith(t *testing.T, written bool, clusterIPs []string, names ...string) objects.Input {
	t.Helper()
	var exports []aggregate.Export
	imports := map[aggregate.Key]objects.ImportState{}
	for _, n := range names {
		k := aggregate.Key{Namespace: "shop", Name: n}
		st := objects.ImportState{Written: written, ClusterIPs: clusterIPs, Endpoints: map[string][]*discoveryv1.EndpointSlice{}}
		for i, c := range []string{"a", "b"} {
			exports = append(exports, aggregate.Export{Cluster: c, Namespace: "shop", Name: n, Created: t0,
				Service: &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: 80}}}})
			st.Endpoints[c] = []*discoveryv1.EndpointSlice{{AddressType: discoveryv1.AddressTypeIPv4,
				Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080))}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.%d.0.1", i)}}}}}
		}
		imports[k] = st
	}
	res, err := aggregate.Aggregate(exports)
	if err != nil {
		t.Fatal(err)
	}
	return objects.Input{Cluster: "a", Namespaces: map[string]bool{"shop": true}, Result: res, Imports: imports}
}

// existingOf is what a member holds after desired was written, as the
// API server returns it (UIDs, resourceVersions, generations, condition
// times, a cluster IP).
func existingOf(d objects.Objects, exports ...string) Existing {
	var ex Existing
	for _, o := range d.Imports {
		c := o.DeepCopy()
		c.UID, c.ResourceVersion, c.Generation = types.UID("uid-"+o.Name), "1", 3
		c.Status.Conditions = stamped(c.Status.Conditions, 3, then)
		ex.Imports = append(ex.Imports, c)
	}
	for _, o := range d.Services {
		c := o.DeepCopy()
		c.ResourceVersion, c.Spec.ClusterIP, c.Spec.ClusterIPs = "1", "10.96.0.10", []string{"10.96.0.10"}
		c.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		ex.Services = append(ex.Services, c)
	}
	for _, o := range d.Slices {
		c := o.DeepCopy()
		c.ResourceVersion = "1"
		ex.Slices = append(ex.Slices, c)
	}
	for _, n := range exports {
		ex.Exports = append(ex.Exports, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: n, Generation: 3}})
	}
	return ex
}

// planView is a plan as lines "<verb> <Kind> <ns>/<name>".
func planView(p Plan) []string {
	var v []string
	add := func(verb, kind string, objs ...metav1.Object) {
		for _, o := range objs {
			v = append(v, fmt.Sprintf("%s %s %s/%s", verb, kind, o.GetNamespace(), o.GetName()))
		}
	}
	for _, c := range []struct {
		kind string
		ch   [3][]metav1.Object
	}{
		{"ServiceImport", [3][]metav1.Object{asObjects(p.Imports.Create), asObjects(p.Imports.Update), asObjects(p.Imports.Delete)}},
		{"Service", [3][]metav1.Object{asObjects(p.Services.Create), asObjects(p.Services.Update), asObjects(p.Services.Delete)}},
		{"EndpointSlice", [3][]metav1.Object{asObjects(p.Slices.Create), asObjects(p.Slices.Update), asObjects(p.Slices.Delete)}},
	} {
		add("create", c.kind, c.ch[0]...)
		add("update", c.kind, c.ch[1]...)
		add("delete", c.kind, c.ch[2]...)
	}
	add("status", "ServiceImport", asObjects(p.ImportStatus)...)
	add("status", "ServiceExport", asObjects(p.Exports)...)
	for _, err := range p.Conflicts {
		v = append(v, "conflict "+err.Error())
	}
	return v
}

func asObjects[T metav1.Object](in []T) []metav1.Object {
	out := make([]metav1.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

func TestComputePlan(t *testing.T) {
	desired := desiredOf(t, true, "cart")
	derived := objects.DerivedServiceName("shop", "cart")
	sliceA, sliceB := desired.Slices[0].Name, desired.Slices[1].Name
	cases := []struct {
		name     string
		desired  objects.Objects
		existing func() Existing
		want     []string
	}{
		{"nothing yet", desired, func() Existing { return Existing{} }, []string{
			"create ServiceImport shop/cart", "create Service shop/" + derived,
			"create EndpointSlice shop/" + sliceA, "create EndpointSlice shop/" + sliceB}},
		{"as desired, with the API server's defaults and others' labels", desired, func() Existing {
			ex := existingOf(desired, "cart")
			ex.Services[0].Labels["team"] = "x"
			ex.Exports[0].Status.Conditions = statusOf(desired.Exports[0], 3, then)
			return ex
		}, nil},
		{"port changed", desired, func() Existing {
			ex := existingOf(desired)
			ex.Imports[0].Spec.Ports[0].Port = 81
			ex.Services[0].Spec.Ports[0].Port = 81
			*ex.Slices[0].Ports[0].Port = 9
			return ex
		}, []string{"update ServiceImport shop/cart", "update Service shop/" + derived, "update EndpointSlice shop/" + sliceA}},
		{"endpoint changed", desired, func() Existing {
			ex := existingOf(desired)
			ex.Slices[1].Endpoints[0].Conditions.Ready = ptr.To(false)
			return ex
		}, []string{"update EndpointSlice shop/" + sliceB}},
		{"clusters changed", desired, func() Existing {
			ex := existingOf(desired)
			ex.Imports[0].Status.Clusters = ex.Imports[0].Status.Clusters[:1]
			return ex
		}, []string{"status ServiceImport shop/cart"}},
		{"our label removed by someone", desired, func() Existing {
			ex := existingOf(desired)
			delete(ex.Services[0].Labels, objects.LabelManagedBy)
			return ex
		}, []string{"conflict Service shop/" + derived + ": " + ErrNotOurs.Error()}},
		{"import gone: ours deleted, others' kept", objects.Objects{}, func() Existing {
			ex := existingOf(desired)
			ex.Services = append(ex.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}})
			delete(ex.Slices[1].Labels, objects.LabelSliceManagedBy)
			return ex
		}, []string{"delete ServiceImport shop/cart", "delete Service shop/" + derived, "delete EndpointSlice shop/" + sliceA}},
		{"a user's ServiceImport of the name", desired, func() Existing {
			return Existing{Imports: []*mcsv1beta1.ServiceImport{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}}}}
		}, []string{"create Service shop/" + derived, "create EndpointSlice shop/" + sliceA, "create EndpointSlice shop/" + sliceB,
			"conflict ServiceImport shop/cart: " + ErrNotOurs.Error()}},
		{"owner recreated", owners(desired, "uid-2"), func() Existing {
			ex := existingOf(owners(desired, "uid-1"))
			ex.Imports[0].UID = "uid-2"
			return ex
		}, []string{"update Service shop/" + derived, "update EndpointSlice shop/" + sliceA, "update EndpointSlice shop/" + sliceB}},
		{"a label of ours removed", desired, func() Existing {
			ex := existingOf(desired)
			delete(ex.Slices[0].Labels, objects.LabelSourceCluster)
			return ex
		}, []string{"update EndpointSlice shop/" + sliceA}},
		{"Headless turned ClusterSetIP: the headless mark goes", desired, func() Existing {
			ex := existingOf(desired)
			ex.Slices[0].Labels[objects.LabelHeadless] = ""
			return ex
		}, []string{"update EndpointSlice shop/" + sliceA}},
		{"addressType changed by someone", desired, func() Existing {
			ex := existingOf(desired)
			ex.Slices[0].AddressType = discoveryv1.AddressTypeIPv6
			return ex
		}, []string{"delete EndpointSlice shop/" + sliceA}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ComputePlan(c.desired, c.existing(), now)
			if got := planView(p); !slices.Equal(got, c.want) {
				t.Errorf("plan\n got %q\nwant %q", got, c.want)
			}
			for _, err := range p.Conflicts {
				if !errors.Is(err, ErrNotOurs) {
					t.Errorf("conflict %v: want ErrNotOurs", err)
				}
			}
		})
	}
}

// owners is d with its objects owned by a ServiceImport of that UID.
func owners(d objects.Objects, uid types.UID) objects.Objects {
	uids := map[aggregate.Key]types.UID{}
	for _, i := range d.Imports {
		uids[aggregate.Key{Namespace: i.Namespace, Name: i.Name}] = uid
	}
	o, _ := withOwners(d, uids)
	return o
}

func TestComputePlanUpdateKeepsTheirs(t *testing.T) {
	desired := desiredOf(t, true, "cart")
	ex := existingOf(desired)
	ex.Services[0].Spec.Ports[0].Port = 81
	ex.Services[0].Labels["team"] = "x"
	ex.Slices[0].Labels[objects.LabelHeadless] = ""
	p := ComputePlan(desired, ex, now)
	u := p.Services.Update[0]
	if _, ok := p.Slices.Update[0].Labels[objects.LabelHeadless]; ok {
		t.Errorf("slice labels %v: the headless mark not desired stays", p.Slices.Update[0].Labels)
	}
	if u.ResourceVersion != "1" || u.Spec.ClusterIP != "10.96.0.10" || u.Labels["team"] != "x" || u.Spec.Ports[0].Port != 80 {
		t.Errorf("update %+v: want the existing Service with the desired ports", u)
	}
}

// statusOf is st's conditions as the API holds them: generation, time.
func statusOf(st objects.ExportStatus, generation int64, at metav1.Time) []metav1.Condition {
	return stamped(st.Conditions, generation, at)
}

// stamped is a copy of cs as the writer sets them: generation, time.
func stamped(cs []metav1.Condition, generation int64, at metav1.Time) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range cs {
		c.ObservedGeneration, c.LastTransitionTime = generation, at
		out = append(out, c)
	}
	return out
}

func TestComputePlanExportStatus(t *testing.T) {
	pending, ready := desiredOf(t, false, "cart"), desiredOf(t, true, "cart")
	other := metav1.Condition{Type: "Synced", Status: metav1.ConditionTrue, Reason: "Other", LastTransitionTime: then}
	cases := []struct {
		name    string
		desired objects.Objects
		have    []metav1.Condition
		want    string // conditions after, "" for no write
	}{
		{"none yet", ready, nil, "Valid=True@now Conflict=False@now Ready=True@now"},
		{"unchanged", ready, statusOf(ready.Exports[0], 3, then), ""},
		{"Ready turns True: only it moves", ready, statusOf(pending.Exports[0], 3, then), "Valid=True@then Conflict=False@then Ready=True@now"},
		{"message only: time kept", ready, withMessage(statusOf(ready.Exports[0], 3, then), "old"), "Valid=True@then Conflict=False@then Ready=True@then"},
		{"older generation: time kept", ready, statusOf(ready.Exports[0], 2, then), "Valid=True@then Conflict=False@then Ready=True@then"},
		{"another's condition kept", ready, append([]metav1.Condition{other}, statusOf(ready.Exports[0], 3, then)[:2]...),
			"Synced=True@then Valid=True@then Conflict=False@then Ready=True@now"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := existingOf(c.desired, "cart", "other")
			ex.Exports[0].Status.Conditions = c.have
			p := ComputePlan(c.desired, ex, now)
			got := ""
			if len(p.Exports) > 0 {
				got = conditionsView(p.Exports[0].Status.Conditions)
			}
			if got != c.want {
				t.Errorf("conditions %q, want %q", got, c.want)
			}
			if len(p.Exports) > 1 {
				t.Errorf("wrote %d exports: an export without desired status is not written", len(p.Exports))
			}
		})
	}
}

func withMessage(cs []metav1.Condition, m string) []metav1.Condition {
	cs[2].Message = m
	return cs
}

func conditionsView(cs []metav1.Condition) string {
	var v []string
	for _, c := range cs {
		at := "then"
		if c.LastTransitionTime.Equal(&now) {
			at = "now"
		}
		if c.ObservedGeneration != 3 && c.Type != "Synced" {
			at += "(generation " + fmt.Sprint(c.ObservedGeneration) + ")"
		}
		v = append(v, fmt.Sprintf("%s=%s@%s", c.Type, c.Status, at))
	}
	return strings.Join(v, " ")
}

// importView is a ServiceImport's status as one line: clusters,
// endpointSliceObjects and the conditions (conditionsView).
func importView(si *mcsv1beta1.ServiceImport) string {
	var clusters []string
	for _, c := range si.Status.Clusters {
		clusters = append(clusters, c.Cluster)
	}
	return fmt.Sprintf("clusters=%s %s %s", strings.Join(clusters, ","), si.Status.EndpointSliceObjects, conditionsView(si.Status.Conditions))
}

// TestComputePlanImportStatus: the whole status is compared (clusters,
// endpointSliceObjects, conditions but their time), so a sync that
// changes nothing writes nothing, and Ready keeps its time while its
// status stays.
func TestComputePlanImportStatus(t *testing.T) {
	pending, ready := pendingOf(t, "cart"), desiredOf(t, true, "cart")
	const both = "clusters=a,b Present "
	cases := []struct {
		name    string
		desired objects.Objects
		edit    func(*mcsv1beta1.ServiceImport) // of the existing import, as ready wrote it
		want    string                          // its status after, "" for no write
	}{
		{"unchanged", ready, func(*mcsv1beta1.ServiceImport) {}, ""},
		{"none yet", ready, func(si *mcsv1beta1.ServiceImport) { si.Status = mcsv1beta1.ServiceImportStatus{} },
			both + "Ready=True@now"},
		{"Pending then Ready: Ready moves", ready, func(si *mcsv1beta1.ServiceImport) {
			si.Status.Conditions = stamped(pending.Imports[0].Status.Conditions, 3, then)
		}, both + "Ready=True@now"},
		{"Ready then Pending (the ClusterIP gone): Ready moves", pending, func(*mcsv1beta1.ServiceImport) {}, both + "Ready=False@now"},
		{"Pending still: no write", pending, func(si *mcsv1beta1.ServiceImport) {
			si.Status.Conditions = stamped(pending.Imports[0].Status.Conditions, 3, then)
		}, ""},
		{"message only: time kept", ready, func(si *mcsv1beta1.ServiceImport) { si.Status.Conditions[0].Message = "old" },
			both + "Ready=True@then"},
		{"older generation: time kept", ready, func(si *mcsv1beta1.ServiceImport) { si.Status.Conditions[0].ObservedGeneration = 2 },
			both + "Ready=True@then"},
		{"endpointSliceObjects Absent: Present again", ready, func(si *mcsv1beta1.ServiceImport) {
			si.Status.EndpointSliceObjects = mcsv1beta1.EndpointSliceObjectsAbsent
		}, both + "Ready=True@then"},
		{"clusters changed", ready, func(si *mcsv1beta1.ServiceImport) { si.Status.Clusters = si.Status.Clusters[:1] },
			both + "Ready=True@then"},
		{"a condition not desired goes", ready, func(si *mcsv1beta1.ServiceImport) {
			si.Status.Conditions = append(si.Status.Conditions, metav1.Condition{Type: "Synced", Status: metav1.ConditionTrue, Reason: "Old", LastTransitionTime: then})
		}, both + "Ready=True@then"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := existingOf(ready)
			c.edit(ex.Imports[0])
			p := ComputePlan(c.desired, ex, now)
			got := ""
			if len(p.ImportStatus) > 0 {
				got = importView(p.ImportStatus[0])
			}
			if got != c.want {
				t.Errorf("status %q, want %q", got, c.want)
			}
			if len(p.ImportStatus) > 0 && p.ImportStatus[0].ResourceVersion != "1" {
				t.Errorf("resourceVersion %q: the status goes on the import read", p.ImportStatus[0].ResourceVersion)
			}
		})
	}
}

// TestComputePlanExportedMetadata: the exported labels and annotations of
// an import follow its exports: added, changed and, once no export has
// them, removed; labels and annotations that others set stay.
func TestComputePlanExportedMetadata(t *testing.T) {
	plain := desiredOf(t, true, "cart")
	exported := desiredOf(t, true, "cart")
	si := exported.Imports[0]
	si.Labels["team"] = "shop"
	si.Annotations = map[string]string{"note": "hi", objects.AnnotationExportedLabels: "team", objects.AnnotationExportedAnnotations: "note"}

	// Before: exported by another version of the export, with others' keys.
	ex := existingOf(plain)
	ex.Imports[0].Labels["theirs"] = "x"
	ex.Imports[0].Annotations = map[string]string{"theirs": "y"}
	p := ComputePlan(exported, ex, now)
	if got := planView(p); !slices.Equal(got, []string{"update ServiceImport shop/cart"}) {
		t.Fatalf("plan %q, want the import updated", got)
	}
	u := p.Imports.Update[0]
	if u.Labels["team"] != "shop" || u.Annotations["note"] != "hi" || u.Labels["theirs"] != "x" || u.Annotations["theirs"] != "y" {
		t.Fatalf("update labels %v annotations %v: want the exported ones beside theirs", u.Labels, u.Annotations)
	}

	// Written: nothing to do.
	ex = Existing{Imports: []*mcsv1beta1.ServiceImport{u}, Services: existingOf(plain).Services, Slices: existingOf(plain).Slices}
	if got := planView(ComputePlan(exported, ex, now)); len(got) != 0 {
		t.Fatalf("plan %q over what it wrote, want none", got)
	}

	// No longer exported: they go, theirs stay.
	p = ComputePlan(plain, ex, now)
	if got := planView(p); !slices.Equal(got, []string{"update ServiceImport shop/cart"}) {
		t.Fatalf("plan %q, want the import updated", got)
	}
	u = p.Imports.Update[0]
	if _, ok := u.Labels["team"]; ok || u.Annotations["note"] != "" || u.Annotations[objects.AnnotationExportedLabels] != "" ||
		u.Labels["theirs"] != "x" || u.Annotations["theirs"] != "y" || u.Labels[objects.LabelManagedBy] != objects.ManagedByValue {
		t.Fatalf("update labels %v annotations %v: want the exported ones gone, theirs and ours kept", u.Labels, u.Annotations)
	}

	// A member's user lists a label of ours as exported: it is not removed.
	ex.Imports[0].Annotations[objects.AnnotationExportedLabels] = objects.LabelManagedBy + ",team"
	u = ComputePlan(plain, ex, now).Imports.Update[0]
	if u.Labels[objects.LabelManagedBy] != objects.ManagedByValue {
		t.Fatalf("labels %v: a listed label of the controller's was removed", u.Labels)
	}
}
