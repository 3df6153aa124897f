package corefile

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/coredns/caddy/caddyfile"

	"github.com/xcc-dns/xcc-dns/internal/printable"
)

// maxImportShown bounds the import pattern a refusal quotes: the
// Corefile's text is its cluster admin's.
const maxImportShown = 256

// importsLocalFiles refuses a Corefile with an import that CoreDNS's
// parser would read from the files of the machine parsing it: a path or
// glob (relative to the working directory, as the parser takes
// fileName) that matches a file here. Parsed by patch-corefile on the
// operator's machine, the files' text would land in the parse, and in
// its errors (an unknown directive is named by its text). An import of
// a snippet the Corefile defines reads nothing, nor does a glob that
// matches nothing here (managed distributions import user snippets so).
// The message names the line and the pattern, never what a file holds.
func importsLocalFiles(text string) error {
	snippets := map[string]bool{}
	d := caddyfile.NewDispenser(fileName, strings.NewReader(text))
	for d.Next() {
		if v := d.Val(); len(v) > 2 && strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")") {
			snippets[v[1:len(v)-1]] = true
		}
	}
	d = caddyfile.NewDispenser(fileName, strings.NewReader(text))
	for d.Next() {
		if d.Val() != "import" || !d.NextArg() {
			continue
		}
		pattern := d.Val()
		if snippets[pattern] {
			continue
		}
		// The parser globs the pattern from the Corefile's directory.
		matches, _ := filepath.Glob(pattern)
		if len(matches) > 0 {
			return fmt.Errorf("the Corefile imports files of this machine (import %q on line %d matches %d): "+
				"xcc-dns does not parse such a Corefile, as its parse here would read them, not the files of the pods that run it",
				printable.Cut(pattern, maxImportShown), d.Line(), len(matches))
		}
	}
	return nil
}

// readsThisMachine refuses a Corefile whose parse here would read this
// machine's environment (readsEnvironment) or files (importsLocalFiles).
func readsThisMachine(text string) error {
	if err := readsEnvironment(text); err != nil {
		return err
	}
	return importsLocalFiles(text)
}
