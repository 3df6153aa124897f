package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The size of the MCS scale benchmark: mcsExportsEnv exports spread over
// a ClusterSet of mcsMembersEnv members (the lab's workload clusters and
// as many more API servers as it takes); unset, the default size. Its
// namespaces, bounds and file names follow from the size.
const (
	mcsExportsEnv     = "XCC_BENCH_MCS_EXPORTS"
	mcsMembersEnv     = "XCC_BENCH_MCS_MEMBERS"
	mcsDefaultExports = 1000
	mcsDefaultMembers = 5
	// mcsExportsPerNamespace keeps the default's shape, 1,000 exports in
	// 10 namespaces, at every size: the controller's informers grow with
	// the exporting namespaces.
	mcsExportsPerNamespace = 100
	// mcsMaxExports is where benchService's addresses (198.19.200.0 and
	// up, 120 exports of two addresses per /24) run out, less the single
	// exports timed after the fill.
	mcsMaxExports = (256-200)*120 - mcsMoreRounds
	// mcsMaxMembers bounds the members: each is a kube-apiserver, and
	// the added ones are named with two digits.
	mcsMaxMembers = 99
	// mcsMinTimeout is the least a bound scaled down for a small size
	// gets (unless the default's own is less): a small set still starts
	// its members' informers.
	mcsMinTimeout = 10 * time.Minute
	// mcsEndpointsPerExport is benchService's shape: two ready IPv4
	// endpoints and one port, so one imported EndpointSlice per source.
	mcsEndpointsPerExport = 2

	// The controller's defaults of its limits per member of a ClusterSet
	// (--max-exports-per-member, --max-endpoints-per-member,
	// --max-slices-per-member); the benchmark raises one only when its
	// size needs more, so that it measures the shipped defaults.
	ctlMaxExportsPerMember   = 1000
	ctlMaxEndpointsPerMember = 10000
	ctlMaxSlicesPerMember    = 2000
	// The controller's defaults of what the informers of one workload
	// cluster may hold together (--workload-max-objects,
	// --workload-max-bytes-per-cluster); past them it cuts the member off
	// and keeps its last exports, so that no new export is imported.
	ctlMaxObjectsPerCluster = 50000
	ctlMaxBytesPerCluster   = 128 << 20
	// What the informers of a member hold of each import (its
	// ServiceImport, its derived Service, seen as a Service too, and its
	// imported EndpointSlice) and of each of its exports (its
	// ServiceExport, Service and EndpointSlice), and the share more for
	// the lab's other objects.
	informerObjectsPerImport = 4
	informerObjectsPerExport = 3
	informerHeadroomPercent  = 25
)

// mcsNamedMembers are the first members the benchmark adds, named as
// before the size was a parameter; further ones are member-<position>.
var mcsNamedMembers = []string{"cluster-d", "cluster-e"}

// mcsScaleSize is how many exports the scale benchmark makes in how
// many members.
type mcsScaleSize struct {
	exports, members int
}

// mcsScaleSizeFromEnv reads the size from the environment, the
// default's numbers for what is unset; workloads is how many members the
// lab has already.
func mcsScaleSizeFromEnv(workloads int) (mcsScaleSize, error) {
	s := mcsScaleSize{exports: mcsDefaultExports, members: mcsDefaultMembers}
	for _, v := range []struct {
		env      string
		n        *int
		min, max int
	}{
		{mcsExportsEnv, &s.exports, 1, mcsMaxExports},
		{mcsMembersEnv, &s.members, workloads, mcsMaxMembers},
	} {
		raw := strings.TrimSpace(os.Getenv(v.env))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < v.min || n > v.max {
			return s, fmt.Errorf("%s=%q: want a whole number from %d to %d", v.env, raw, v.min, v.max)
		}
		*v.n = n
	}
	return s, nil
}

func (s mcsScaleSize) isDefault() bool {
	return s.exports == mcsDefaultExports && s.members == mcsDefaultMembers
}

// namespaces is how many namespaces, in every member, hold the exports.
func (s mcsScaleSize) namespaces() int {
	return (s.exports + mcsExportsPerNamespace - 1) / mcsExportsPerNamespace
}

// namespace is the namespace of export i.
func (s mcsScaleSize) namespace(i int) string {
	return mcsScaleNamespaceName(i % s.namespaces())
}

// member is the index of the member export i is made in.
func (s mcsScaleSize) member(i int) int { return i % s.members }

// scaled is d, a bound set for the default size, at this size: in
// proportion to what the controller writes, every import in every
// member, and never under mcsMinTimeout unless d is.
func (s mcsScaleSize) scaled(d time.Duration) time.Duration {
	f := float64(s.exports*s.members) / float64(mcsDefaultExports*mcsDefaultMembers)
	return max(time.Duration(float64(d)*f), min(d, mcsMinTimeout))
}

// extraMembers names the API servers the benchmark adds to the lab's
// workloads members.
func (s mcsScaleSize) extraMembers(workloads int) []string {
	var names []string
	for i := range s.members - workloads {
		if i < len(mcsNamedMembers) {
			names = append(names, mcsNamedMembers[i])
		} else {
			names = append(names, fmt.Sprintf("member-%02d", workloads+i+1))
		}
	}
	return names
}

// file names one of the benchmark's files: as always at the default
// size, with the size in it at another, so both can be kept side by side.
func (s mcsScaleSize) file(name string) string {
	if s.isDefault() {
		return "mcs-" + name
	}
	return fmt.Sprintf("mcs-%dx%d-%s", s.exports, s.members, name)
}

// exportsLabel is the exports as the table's row label: 1,000.
func (s mcsScaleSize) exportsLabel() string {
	digits := strconv.Itoa(s.exports)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// controllerFlags are the controller's per-member limits the size needs
// raised: the member making the most exports (the fill and the single
// ones after it) puts that many imports into every member. None at the
// default size, nor at 5,000 in ten.
func (s mcsScaleSize) controllerFlags() []string {
	return memberLimitFlags((s.exports+mcsMoreRounds+s.members-1)/s.members, s.exports+mcsMoreRounds)
}

// memberLimitFlags are the controller's limits raised for a member that
// exports per Services of benchService's shape (mcsEndpointsPerExport
// endpoints and one imported EndpointSlice each) and holds imports
// imports. None where the defaults hold them, so that the shipped
// defaults are what is measured.
func memberLimitFlags(per, imports int) []string {
	flags := informerLimitFlags(per, imports)
	for _, l := range []struct {
		flag       string
		need, have int
	}{
		{"--max-exports-per-member", per, ctlMaxExportsPerMember},
		{"--max-endpoints-per-member", per * mcsEndpointsPerExport, ctlMaxEndpointsPerMember},
		{"--max-slices-per-member", per, ctlMaxSlicesPerMember},
	} {
		if l.need > l.have {
			flags = append(flags, fmt.Sprintf("%s=%d", l.flag, l.need))
		}
	}
	return flags
}

// informerLimitFlags raise what the informers of one member may hold
// when its exports and imports need more than the default, the bytes
// in proportion (the default's bytes per object).
func informerLimitFlags(exports, imports int) []string {
	objects := imports*informerObjectsPerImport + exports*informerObjectsPerExport
	objects += objects * informerHeadroomPercent / 100
	if objects <= ctlMaxObjectsPerCluster {
		return nil
	}
	bytes := int64(ctlMaxBytesPerCluster) * int64(objects) / ctlMaxObjectsPerCluster
	return []string{
		fmt.Sprintf("--workload-max-objects=%d", objects),
		fmt.Sprintf("--workload-max-bytes-per-cluster=%d", bytes),
	}
}
