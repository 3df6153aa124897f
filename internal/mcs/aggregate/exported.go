package aggregate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// A ServiceExport's spec.exportedLabels and spec.exportedAnnotations
// (optional in KEP-1645) are copied onto the ServiceImport of every
// member. They are maps of a CRD, which the API server does not check,
// written by a tenant of one member for objects of every member: each
// entry is checked here, and one that could not be written, or would
// take over a key the controller or the MCS API reads, is left out and
// named in the export's Valid message. The rest is exported.

// Bounds of what one export may put on the ServiceImport of every member.
const (
	// MaxExportedEntries is the most labels, and the most annotations,
	// one export gives its import.
	MaxExportedEntries = 32
	// MaxExportedAnnotationBytes bounds the keys and values of the
	// exported annotations together (the API allows 256 KiB for all of
	// an object's annotations).
	MaxExportedAnnotationBytes = 16 << 10
)

// reservedDomains are the key prefixes (and their subdomains) that no
// export may set: this project's and the MCS API's own.
var reservedDomains = []string{"xcc-dns.io", "multicluster.kubernetes.io", "multicluster.x-k8s.io"}

// reservedKeys are the keys outside those domains that the controller
// sets on the objects of an import (objects.ManagedLabels).
var reservedKeys = []string{
	"app.kubernetes.io/managed-by", "endpointslice.kubernetes.io/managed-by",
	"kubernetes.io/service-name", "service.kubernetes.io/headless",
}

// Reserved reports whether an export may not set key on an import.
func Reserved(key string) bool {
	if slices.Contains(reservedKeys, key) {
		return true
	}
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	for _, d := range reservedDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// ReadBound cuts a map of exported entries, as a controller caches it, to
// its first entries in key order within twice the bounds of what an
// import may carry, and says how many it cut: a tenant may write a
// megabyte into each ServiceExport, and the entries past the bounds could
// only be left out.
func ReadBound(m map[string]string) (map[string]string, int) {
	if len(m) <= 2*MaxExportedEntries && metadataBytes(m) <= 2*MaxExportedAnnotationBytes {
		return m, 0
	}
	kept := map[string]string{}
	size := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(kept) == 2*MaxExportedEntries || size+len(k)+len(m[k]) > 2*MaxExportedAnnotationBytes {
			break
		}
		kept[k] = m[k]
		size += len(k) + len(m[k])
	}
	return kept, len(m) - len(kept)
}

func metadataBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// exportedMetadata returns the entries of m that an import may carry (nil
// for none) and a note on each entry left out. Entries are taken in key
// order, so the same map always keeps the same ones.
func exportedMetadata(m map[string]string, labels bool) (map[string]string, []string) {
	field := "exportedAnnotations"
	if labels {
		field = "exportedLabels"
	}
	var kept map[string]string
	var notes []string
	size := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		why := ""
		switch errs := validation.IsQualifiedName(k); {
		case len(errs) > 0:
			why = "not a valid key: " + errs[0]
		case Reserved(k):
			why = "reserved for the controller and the MCS API"
		case labels && len(validation.IsValidLabelValue(v)) > 0:
			why = "not a valid label value: " + validation.IsValidLabelValue(v)[0]
		case len(kept) == MaxExportedEntries:
			why = fmt.Sprintf("more than %d entries", MaxExportedEntries)
		case !labels && size+len(k)+len(v) > MaxExportedAnnotationBytes:
			why = fmt.Sprintf("more than %d bytes in all", MaxExportedAnnotationBytes)
		}
		if why != "" {
			notes = append(notes, fmt.Sprintf("%s %q left out: %s", field, truncate(k), why))
			continue
		}
		if kept == nil {
			kept = map[string]string{}
		}
		kept[k] = v
		size += len(k) + len(v)
	}
	return kept, notes
}

// maxNoteKey bounds a key quoted in a note: a tenant's key may be long.
const maxNoteKey = 80

func truncate(s string) string {
	if len(s) <= maxNoteKey {
		return s
	}
	return s[:maxNoteKey] + "..."
}

// maxNotes bounds the notes a Valid message lists.
const maxNotes = 3

// withNotes is msg followed by the first notes and how many more.
func withNotes(msg string, notes []string) string {
	if len(notes) == 0 {
		return msg
	}
	shown := notes[:min(len(notes), maxNotes)]
	msg += "; " + strings.Join(shown, "; ")
	if more := len(notes) - len(shown); more > 0 {
		msg += fmt.Sprintf("; and %d more left out", more)
	}
	return msg
}
