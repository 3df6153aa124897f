package owned

import (
	"hash/maphash"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// versionSeed seeds VersionDigest: its digests are compared within this
// process only.
var versionSeed = maphash.MakeSeed()

// VersionDigest is a digest of one version of o, an object of the kind
// the caller names by kind: its namespace, name, UID and resourceVersion,
// so that any write of it, or its deletion and making again, changes the
// digest. Sums of them stand for sets of objects without an order.
func VersionDigest(kind byte, o metav1.Object) uint64 {
	var h maphash.Hash
	h.SetSeed(versionSeed)
	_ = h.WriteByte(kind)
	for _, part := range []string{o.GetNamespace(), o.GetName(), string(o.GetUID()), o.GetResourceVersion()} {
		_, _ = h.WriteString(part)
		_ = h.WriteByte(0)
	}
	return h.Sum64()
}
