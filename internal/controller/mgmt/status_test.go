package mgmt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"a longer message", 10, "a longe..."},
		// "é" is two bytes: the cut backs off to the start of the rune.
		{"abcdeé-and-more", 9, "abcde..."},
		{strings.Repeat("日本", 10), 10, "日本..."},
	} {
		got := Truncate(c.in, c.n)
		if got != c.want || len(got) > c.n || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
