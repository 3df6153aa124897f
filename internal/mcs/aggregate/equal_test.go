package aggregate

import (
	"reflect"
	"testing"
	"time"
)

// Equal sees a change in every field of an Import: one added to the
// type and not to Equal fails here, before a memo keeps stale objects.
func TestImportEqualEveryField(t *testing.T) {
	base := func() Import {
		return Import{Key: Key{Namespace: "ns", Name: "svc"}, Type: ImportClusterSetIP, Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80}},
			SessionAffinity: "None", SessionAffinityConfig: &SessionAffinityConfig{TimeoutSeconds: 10}, InternalTrafficPolicy: "Cluster",
			TrafficDistribution: "PreferClose", Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"},
			Served: map[string][]Port{"c1": {{Name: "http", Protocol: "TCP", Port: 80}}}, Created: map[string]time.Time{"c1": time.Unix(1, 0)},
			Winner: "c1", Clusters: []string{"c1"}}
	}
	if !base().Equal(base()) {
		t.Fatal("an import is not Equal to a copy of itself")
	}
	typ := reflect.TypeFor[Import]()
	for i := range typ.NumField() {
		changed := base()
		f := reflect.ValueOf(&changed).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Struct: // Key
			f.Field(0).SetString("other")
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), f.Len()+1, f.Len()+1))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("field %s of kind %s: teach this test to change it", typ.Field(i).Name, f.Kind())
		}
		if base().Equal(changed) {
			t.Errorf("Equal misses a change of %s", typ.Field(i).Name)
		}
	}
}
