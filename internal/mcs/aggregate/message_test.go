package aggregate

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A long message is cut within the bound, on a character boundary, says
// so, and is not cut again: the controller writes what it reads back.
func TestCutMessage(t *testing.T) {
	for _, msg := range []string{"", "short", strings.Repeat("é", MaxConditionMessageBytes), strings.Repeat("x", 1<<20)} {
		got := CutMessage(msg)
		if len(got) > MaxConditionMessageBytes || !utf8.ValidString(got) {
			t.Errorf("cut to %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
		}
		if len(msg) > MaxConditionMessageBytes && !strings.HasSuffix(got, CutMark) {
			t.Errorf("a cut message does not say so")
		}
		if len(msg) <= MaxConditionMessageBytes && got != msg {
			t.Errorf("a short message was changed")
		}
		if CutMessage(got) != got {
			t.Errorf("cutting again changes it")
		}
	}
}
