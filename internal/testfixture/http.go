package testfixture

import (
	"io"
	"net/http"
	"testing"
)

// HTTPGet GETs url and returns the status code and body; a failed request
// or read fails the test.
func HTTPGet(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}
