package apply

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// planned lists the imports Split leaves to plan, by the imports of the
// desired objects and the held ones together.
func planned(d objects.Objects, e Existing) []string {
	seen := map[string]bool{}
	d.Digests = nil
	for k := range desiredDigests(d) {
		seen[k.Name] = true
	}
	for _, o := range e.Imports {
		seen[importKey(o).Name] = true
	}
	for _, o := range e.Services {
		seen[importKey(o).Name] = true
	}
	for _, o := range e.Slices {
		seen[importKey(o).Name] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// After a write, only an import whose desired objects changed, whose
// objects someone wrote, or that went is planned again; Forget plans
// every one.
func TestSettled(t *testing.T) {
	all := desiredOf(t, true, "api", "web", "db")
	held := existingOf(all, "api")
	for _, tc := range []struct {
		name    string
		desired objects.Objects
		held    func() Existing
		forget  bool
		want    []string
	}{
		{name: "nothing changed", desired: all, held: func() Existing { return held }},
		{name: "one more import", desired: desiredOf(t, true, "api", "web", "db", "cart"), held: func() Existing { return held },
			want: []string{"cart"}},
		{name: "one import asked for another address", desired: func() objects.Objects {
			d := desiredOf(t, true, "api", "web", "db")
			other := desiredWith(t, true, []string{"10.96.0.99"}, "web")
			for i, si := range d.Imports {
				if si.Name == "web" {
					d.Imports[i] = other.Imports[0]
				}
			}
			d.Digests = nil // changed by hand: not Compute's
			return d
		}(), held: func() Existing { return held }, want: []string{"web"}},
		{name: "someone wrote a held object", desired: all, held: func() Existing {
			h := existingOf(all, "api")
			for _, s := range h.Services {
				if s.Labels[objects.LabelServiceName] == "db" {
					s.ResourceVersion = "2"
				}
			}
			return h
		}, want: []string{"db"}},
		{name: "an import went", desired: desiredOf(t, true, "api", "web"), held: func() Existing { return held },
			want: []string{"db"}},
		{name: "forgotten", desired: all, held: func() Existing { return held }, forget: true,
			want: []string{"api", "db", "web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSettled()
			_, _, _, r := s.Split(all, held)
			r.Done(held, nil)
			if tc.forget {
				s.Forget()
			}
			d, e, same, _ := s.Split(tc.desired, tc.held())
			if got := planned(d, e); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("planned %q, want %q", got, tc.want)
			}
			if len(d.Exports) != len(tc.desired.Exports) || len(e.Exports) != len(held.Exports) {
				t.Errorf("exports dropped: %d of %d desired, %d of %d held", len(d.Exports), len(tc.desired.Exports), len(e.Exports), len(held.Exports))
			}
			for _, k := range same {
				if slices.Contains(tc.want, k.Name) {
					t.Errorf("%s both planned and settled", k.Name)
				}
			}
		})
	}
}

// A refused import is not settled, and is left out of the writes while
// it waits out its backoff, which doubles with each refusal in a row;
// what is desired of it changing plans it at once.
func TestSettledRefusedImportBacksOff(t *testing.T) {
	all := desiredOf(t, true, "api", "web")
	held := existingOf(all, "api")
	now := time.Unix(1000, 0)
	s := NewSettled()
	s.now = func() time.Time { return now }
	web := aggregate.Key{Namespace: "shop", Name: "web"}
	refusal := errors.New("denied")
	write := func(d objects.Objects, refused map[aggregate.Key]error) []string {
		pd, pe, _, r := s.Split(d, held)
		r.Done(held, refused)
		return planned(pd, pe)
	}
	if got := write(all, map[aggregate.Key]error{web: refusal}); !reflect.DeepEqual(got, []string{"api", "web"}) {
		t.Fatalf("first write planned %q", got)
	}
	if s.Holds(web) || !s.Holds(aggregate.Key{Namespace: "shop", Name: "api"}) {
		t.Error("want api settled and web not")
	}
	if got, retry := s.Refused(); !errors.Is(got[web], refusal) || !retry.Equal(now.Add(MinRefusedBackoff)) {
		t.Errorf("Refused() = %v, %s; want web's refusal, retried after %s", got, retry, MinRefusedBackoff)
	}
	if got := write(all, nil); len(got) != 0 {
		t.Errorf("planned %q while web waits out its backoff", got)
	}
	now = now.Add(MinRefusedBackoff)
	if got := write(all, map[aggregate.Key]error{web: refusal}); !reflect.DeepEqual(got, []string{"web"}) {
		t.Errorf("planned %q after the backoff, want web", got)
	}
	if _, retry := s.Refused(); !retry.Equal(now.Add(2 * MinRefusedBackoff)) {
		t.Errorf("second refusal retried at %s, want the backoff doubled", retry)
	}
	other := desiredWith(t, true, []string{"10.96.0.99"}, "api", "web")
	other.Digests = nil
	if got := write(other, nil); !slices.Contains(got, "web") {
		t.Errorf("planned %q: web's desired objects changed, want it planned", got)
	}
	if got, _ := s.Refused(); len(got) != 0 || !s.Holds(web) {
		t.Errorf("refused %v after web was written, want none and web settled", got)
	}
}

// With Round.Settled as objects.Input.Skip, a settled import is not even
// built: a second write of the same imports builds none and plans none,
// and one whose address changed is the only one built and planned.
func TestSettledSkipsBuildingSettledImports(t *testing.T) {
	s, memo := NewSettled(), objects.NewMemo()
	in := inputWith(t, true, []string{"10.96.0.10"}, "api", "web", "db")
	round := func(in objects.Input, held Existing) (built, plannedNames []string, r *Round) {
		r = s.Begin(held)
		in.Skip = r.Settled
		objs := objects.ComputeWith(in, memo)
		for _, si := range objs.Imports {
			built = append(built, si.Name)
		}
		d, e, _ := r.Split(objs, held)
		return built, planned(d, e), r
	}
	first := objects.Compute(in)
	held := existingOf(first, "api")
	built, _, r := round(in, held)
	if len(built) != 3 {
		t.Fatalf("first write built %q, want every import", built)
	}
	r.Done(held, nil)
	if built, got, _ := round(in, held); len(built) != 0 || len(got) != 0 {
		t.Errorf("nothing changed, yet built %q and planned %q", built, got)
	}
	// The same inputs but web's address.
	web := in
	web.Imports = maps.Clone(in.Imports)
	k := aggregate.Key{Namespace: "shop", Name: "web"}
	st := web.Imports[k]
	st.ClusterIPs = []string{"10.96.0.99"}
	web.Imports[k] = st
	if built, got, _ := round(web, held); !reflect.DeepEqual(built, []string{"web"}) || !reflect.DeepEqual(got, []string{"web"}) {
		t.Errorf("web's address changed: built %q, planned %q; want web alone", built, got)
	}
}
