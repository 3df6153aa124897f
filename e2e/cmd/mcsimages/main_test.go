package main

import (
	"reflect"
	"testing"
)

func TestParseLdd(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd5a7e5000)\n" +
		"\tlibwrap.so.0 => /lib/x86_64-linux-gnu/libwrap.so.0 (0x00007f0d1c8d0000)\n" +
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0d1c6ef000)\n" +
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f0d1c905000)\n"
	got, err := parseLdd([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/lib/x86_64-linux-gnu/libwrap.so.0", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := parseLdd([]byte("\tlibfoo.so.1 => not found\n")); err == nil {
		t.Error("a library not found: no error")
	}
}
