package printable

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Text from a cluster is escaped as Go writes it in a quoted string
// (control characters, invalid UTF-8, format characters such as a
// right-to-left override), the rest kept as it is.
func TestLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"cluster-a", "cluster-a"},
		{"x\x1b[2J\x1b[Hall Ready", `x\x1b[2J\x1b[Hall Ready`},
		{"pod\rall 3 GatewayDNS Ready", `pod\rall 3 GatewayDNS Ready`},
		{"a\nnot read: none", `a\nnot read: none`},
		{"tab\there", `tab\there`},
		{"del\x7f c1\u009b[31m", `del\x7f c1\u009b[31m`},
		{"abc\u202edef", `abc\u202edef`},
		{"bad \xff\xfe utf-8", `bad \xff\xfe utf-8`},
		{"ünïcödé, 名前 and a back\\slash", "ünïcödé, 名前 and a back\\slash"},
		{"", ""},
	} {
		got := Line(tc.in)
		if got != tc.want {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !IsLine(got) {
			t.Errorf("Line(%q) = %q: not printable", tc.in, got)
		}
	}
}

// A line is cut to MaxBytes, the marker included, saying how many bytes
// of the text are left out; a huge one (an API server's 32 MiB error) is
// cut without escaping the whole of it.
func TestLineBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"huge", strings.Repeat("x", 32<<20)},
		{"huge escapes", strings.Repeat("\x1b", 32<<20)},
		{"huge wide runes", strings.Repeat("名", 1<<20)},
		{"just over", strings.Repeat("y", MaxBytes+1)},
	} {
		got := Line(tc.in)
		if len(got) > MaxBytes || !IsLine(got) {
			t.Errorf("%s: %d bytes, printable %v; want at most %d", tc.name, len(got), IsLine(got), MaxBytes)
		}
		prefix, rest, ok := strings.Cut(got, "… (")
		if !ok || !strings.HasSuffix(rest, " bytes more)") {
			t.Fatalf("%s: %q…: no marker", tc.name, got[len(got)-40:])
		}
		more, err := strconv.Atoi(strings.TrimSuffix(rest, " bytes more)"))
		shown := len(tc.in) - more
		if err != nil || shown <= 0 || Line(tc.in[:shown]) != prefix {
			t.Errorf("%s: %d bytes more (%v), the shown part %d bytes", tc.name, more, err, len(prefix))
		}
	}
	exact := strings.Repeat("z", MaxBytes)
	if got := Line(exact); got != exact {
		t.Errorf("a line of exactly MaxBytes is cut: %d bytes", len(got))
	}
	if got := Cut("0123456789", 5); len(got) > 5 && !strings.HasPrefix(got, "…") {
		t.Errorf("Cut to less than the marker: %q", got)
	}
}

// Printing a printed line again changes nothing: a report cleaned
// twice reads the same.
func TestLineIdempotent(t *testing.T) {
	for _, in := range []string{"\x1b[31mred", strings.Repeat("\r", 5000), strings.Repeat("名", 2000), "plain"} {
		once := Line(in)
		if twice := Line(once); twice != once {
			t.Errorf("Line(Line(%.20q)) = %.60q, want %.60q", in, twice, once)
		}
	}
}

type inner struct {
	Name  string
	Lines []string
}

type report struct {
	inner
	Why       string
	Pods      []inner
	Forward   *inner
	Labels    map[string]string
	Count     int
	unshown   string
	Interface any
}

// Clean escapes and bounds every exported string a value holds, through
// embedded structs, pointers, slices, maps and interfaces, and leaves the
// value it was given as it was.
func TestClean(t *testing.T) {
	esc := "\x1b[2J"
	in := report{
		inner:     inner{Name: "n" + esc, Lines: []string{esc}},
		Why:       strings.Repeat("w", 2*MaxBytes),
		Pods:      []inner{{Name: "pod\r", Lines: []string{"a\nb"}}},
		Forward:   &inner{Name: esc},
		Labels:    map[string]string{"k" + esc: "v" + esc},
		Count:     3,
		unshown:   esc,
		Interface: "i" + esc,
	}
	orig := report{
		inner: inner{Name: in.Name, Lines: []string{esc}}, Why: in.Why,
		Pods: []inner{{Name: "pod\r", Lines: []string{"a\nb"}}}, Forward: &inner{Name: esc},
		Labels: map[string]string{"k" + esc: "v" + esc}, Count: 3, unshown: esc, Interface: "i" + esc,
	}
	got := Clean(in)
	if !reflect.DeepEqual(in, orig) {
		t.Errorf("Clean changed its argument: %+v", in)
	}
	want := report{
		inner: inner{Name: `n\x1b[2J`, Lines: []string{`\x1b[2J`}}, Why: Line(in.Why),
		Pods: []inner{{Name: `pod\r`, Lines: []string{`a\nb`}}}, Forward: &inner{Name: `\x1b[2J`},
		Labels: map[string]string{`k\x1b[2J`: `v\x1b[2J`}, Count: 3, unshown: esc, Interface: `i\x1b[2J`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Clean = %+v\nwant    %+v", got, want)
	}
	if len(got.Why) > MaxBytes {
		t.Errorf("a string of %d bytes is not cut", len(got.Why))
	}
	var nilPtr *report
	if Clean(nilPtr) != nil {
		t.Error("a nil pointer is not nil")
	}
}
