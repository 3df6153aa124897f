// Package printable makes text that came from a cluster safe to print on
// an operator's terminal: the commands that read clusters (xcc-syncer
// explain, status) print pod names, status messages and API servers'
// error text that a tenant or a workload cluster's admin chose. Such text
// could hold escape sequences (clearing the screen, then printing a false
// "all Ready"), carriage returns and newlines that forge lines, or be
// megabytes long. Line escapes and bounds one string, Clean every string
// of a report, for its text and its JSON alike.
package printable

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxBytes is the most bytes of one string printed, the marker of what
// is left out included: a status message the controller writes is at
// most 1 KiB already, an API server's error text may be 32 MiB.
const MaxBytes = 1 << 10

// marker says how many bytes of the text are left out.
func marker(more int) string { return "… (" + strconv.Itoa(more) + " bytes more)" }

// Line is s as one printable line (Cut to MaxBytes).
func Line(s string) string { return Cut(s, MaxBytes) }

// Cut is s as one printable line of at most max bytes (or the marker
// alone, when max leaves no room for it): every rune that is not
// printable (control characters, DEL, C1 controls, format characters
// such as a right-to-left override, other spaces than ' ') escaped as Go
// quotes it (\x1b, \r, \n, \u202e), a byte that is not UTF-8 as \xff;
// past max, the part that fits and "… (N bytes more)", N counting bytes
// of s. A backslash is kept, so that a printed line printed again is the
// same. Only what is shown is read, so a huge s costs no more than a
// short one.
func Cut(s string, max int) string {
	var b strings.Builder
	// room is what the marker may need; cutLen and cutAt are where the
	// output ends, in it and in s, if it must end with the marker.
	room := len(marker(len(s)))
	cutLen, cutAt := -1, 0
	for i := 0; i < len(s); {
		piece, size := escapeRune(s[i:])
		if b.Len()+len(piece) > max-room && cutLen < 0 {
			cutLen, cutAt = b.Len(), i
		}
		if b.Len()+len(piece) > max {
			return b.String()[:cutLen] + marker(len(s)-cutAt)
		}
		b.WriteString(piece)
		i += size
	}
	return b.String()
}

// IsLine reports whether s is one line a terminal prints as it is: valid
// UTF-8 of printable runes only, as Cut's results are.
func IsLine(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// escapeRune is the first rune of s as printed, and its size in s.
func escapeRune(s string) (string, int) {
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && size <= 1:
		return `\x` + strconv.FormatUint(uint64(s[0])|0x100, 16)[1:], 1
	case strconv.IsPrint(r):
		return s[:size], size
	}
	q := strconv.QuoteRune(r)
	return q[1 : len(q)-1], size
}

// Clean is v with every exported string it holds, through structs
// (embedded ones too), pointers, slices, arrays, maps and interfaces,
// passed through Line: what a report says, ready for its text and its
// JSON. What v points to is copied, never changed.
func Clean[T any](v T) T {
	clean(reflect.ValueOf(&v).Elem())
	return v
}

func clean(v reflect.Value) {
	// The fields of an unexported embedded struct can be set, the struct
	// itself cannot: structs and arrays are walked whatever it says.
	if k := v.Kind(); !v.CanSet() && k != reflect.Struct && k != reflect.Array {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(Line(v.String()))
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if f := t.Field(i); f.IsExported() || f.Anonymous {
				clean(v.Field(i))
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			clean(v.Index(i))
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		c := reflect.New(v.Elem().Type()).Elem()
		c.Set(v.Elem())
		clean(c)
		if v.Kind() == reflect.Pointer {
			v.Set(c.Addr())
		} else {
			v.Set(c)
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := range c.Len() {
			clean(c.Index(i))
		}
		v.Set(c)
	case reflect.Map:
		cleanMap(v)
	}
}

// cleanMap replaces the map v with a copy whose keys and values are
// cleaned.
func cleanMap(v reflect.Value) {
	if v.IsNil() {
		return
	}
	c := reflect.MakeMapWithSize(v.Type(), v.Len())
	for it := v.MapRange(); it.Next(); {
		k := reflect.New(v.Type().Key()).Elem()
		k.Set(it.Key())
		clean(k)
		e := reflect.New(v.Type().Elem()).Elem()
		e.Set(it.Value())
		clean(e)
		c.SetMapIndex(k, e)
	}
	v.Set(c)
}
