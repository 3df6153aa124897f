package promtext_test

import (
	"strings"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/promtext"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r *strings.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A body is read to its limit and no further; a label's value is all of
// it, whatever it holds.
func TestParse(t *testing.T) {
	body := "m{a=\"x,b=y\"} 2\n" + strings.Repeat("# filler\n", 1000)
	cr := &countingReader{r: strings.NewReader(body)}
	if _, err := promtext.Parse(cr, 100); err == nil || !strings.Contains(err.Error(), "more than 100 bytes") {
		t.Fatalf("a body past the limit: %v", err)
	}
	if cr.n > 101 {
		t.Fatalf("read %d bytes of a body limited to 100", cr.n)
	}
	fams, err := promtext.Parse(strings.NewReader("m{a=\"x,b=y\"} 2\n"), 100)
	if err != nil {
		t.Fatal(err)
	}
	s := fams["m"].GetMetric()[0]
	if promtext.Label(s, "a") != "x,b=y" || promtext.Label(s, "b") != "" || promtext.Value(s) != 2 || !promtext.Plain(s) {
		t.Fatalf("m read as %v", s)
	}
	if _, err := promtext.Parse(strings.NewReader("m{ 1\n"), 100); err == nil {
		t.Fatal("a body not in the text format was read")
	}
}
