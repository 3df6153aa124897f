// Package e2e holds the end-to-end tests: one lab (see package lab) shared
// by every test, and a real DNS client asking cluster-b's cluster DNS what
// a pod in cluster-b would ask.
//
// The tests share the lab and some change it, so they run in one explicit
// order: the subtests of TestE2E, as listed in suite. No other top-level
// test may exist (TestE2E fails if one does): Go would run it in the
// order of the files' names instead.
package e2e

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const labStartTimeout = 10 * time.Minute

// theLab is the lab every test uses.
var theLab *lab.Lab

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Before the lab starts: a wrong order fails at once.
	if err := checkSuite(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "xcc-dns-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: create lab dir:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), labStartTimeout)
	defer cancel()
	began := time.Now()
	theLab, err = lab.Start(ctx, lab.Options{Dir: dir, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: lab did not start:", err)
		fmt.Fprintln(os.Stderr, "e2e: files and logs kept in", dir)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: lab started in %s\n", time.Since(began).Round(100*time.Millisecond))
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAILED; last lines of every process's log:\n%s\n", theLab.Tails())
	}
	theLab.Stop()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: files and logs kept in", dir)
	} else {
		os.RemoveAll(dir)
	}
	return code
}

// phase says what a test leaves of the lab for the tests after it. The
// suite runs the phases in this order.
type phase int

const (
	// shared tests leave the lab as they found it, or as the walkthrough
	// leaves it (applying it is idempotent).
	shared phase = iota
	// bench tests (skipped unless XCC_BENCH is set) change the lab: the
	// scale benchmark leaves its Clusters behind.
	bench
	// outage tests stop lab processes: the management API server stays
	// stopped.
	outage
)

func (p phase) String() string { return [...]string{"shared", "bench", "outage"}[p] }

// suite is every end-to-end test, in the order TestE2E runs them. Select
// some with -run, e.g. -run '^TestE2E$/^Walkthrough$'.
var suite = []struct {
	name  string
	phase phase
	run   func(*testing.T)
}{
	{"ChartImages", shared, testChartImages},
	{"ChartRBAC", shared, testChartRBAC},
	{"LabClusters", shared, testLabClusters},
	{"Walkthrough", shared, testWalkthrough},
	{"GatewaysLocal", shared, testGatewaysLocal},
	{"GatewayIPChange", shared, testGatewayIPChange},
	{"IPv6Gateway", shared, testIPv6Gateway},
	{"ReverseLookup", shared, testReverseLookup},
	{"APIName", shared, testAPIName},
	{"ThirdClusterAndHostnameGateway", shared, testThirdClusterAndHostnameGateway},
	{"GatewayDNSDeleted", shared, testGatewayDNSDeleted},
	{"PatchCorefile", shared, testPatchCorefile},
	{"ForwardBlockFollowsTheService", shared, testForwardBlockFollowsTheService},
	{"ForwardBlockHoldsTheAddress", shared, testForwardBlockHoldsTheAddress},
	{"KubeconfigInstructionsRefused", shared, testKubeconfigInstructionsRefused},
	{"HostileSlices", shared, testHostileSlices},
	{"HostileQueries", shared, testHostileQueries},
	{"Headless", shared, testHeadless},
	{"Names", shared, testNames},
	{"MCS", shared, testMCS},
	{"MCSByCoreDNS", shared, testMCSByCoreDNS},
	{"Explain", shared, testExplain},
	{"MCSFrozenMember", shared, testMCSFrozenMember},
	{"MCSRefusingMember", shared, testMCSRefusingMember},
	{"MCSSlowMember", shared, testMCSSlowMember},
	{"MCSHostileRefusals", shared, testMCSHostileRefusals},
	{"MCSFlappingMember", shared, testMCSFlappingMember},
	{"MCSClusterIDs", shared, testMCSClusterIDs},
	{"MCSAllowedCIDRs", shared, testMCSAllowedCIDRs},
	{"MCSLimitsCompose", shared, testMCSLimitsCompose},
	{"MCSEastWestObjects", shared, testEastWestObjects},
	{"MCSNetworks", shared, testMCSNetworks},
	{"ControllerFailover", shared, testControllerFailover},
	{"MCSShutdownFrozenMember", shared, testMCSShutdownFrozenMember},

	{"BenchServeKills", bench, testBenchServeKills},
	{"BenchPropagation", bench, testBenchPropagation},
	{"BenchGatewaysFailover", bench, testBenchGatewaysFailover},
	{"BenchHangingTarget", bench, testBenchHangingTarget},
	{"BenchNamesCost", bench, testBenchNamesCost},
	{"BenchHeadlessChurn", bench, testBenchHeadlessChurn},
	{"BenchHeadlessScale", bench, testBenchHeadlessScale},
	{"BenchMCSLatency", bench, testBenchMCSLatency},
	{"BenchMCSScale", bench, testBenchMCSScale},
	{"BenchPeers", bench, testBenchPeers},
	{"BenchScale", bench, testBenchScale},

	{"HeadlessDown", outage, testHeadlessDown},
	{"HeadlessForgedRecovery", outage, testHeadlessForgedRecovery},
	{"WorkloadAPIServerKilled", outage, testWorkloadAPIServerKilled},
	{"ExplainClusterDown", outage, testExplainClusterDown},
	{"ManagementDown", outage, testManagementDown},
	{"WorkloadAPIServerDown", outage, testWorkloadAPIServerDown},
	{"ReplicasRestart", outage, testReplicasRestart},
}

// TestE2E runs suite in its order (TestMain checked it).
func TestE2E(t *testing.T) {
	for _, tc := range suite {
		t.Run(tc.name, tc.run)
	}
}

// checkSuite fails when a test of a phase follows one of a later phase,
// a name repeats, or a top-level test other than TestE2E exists in this
// package's files (it would run outside suite, in the files' order).
func checkSuite() error {
	seen := map[string]bool{}
	for i, tc := range suite {
		if seen[tc.name] {
			return fmt.Errorf("suite lists %s twice", tc.name)
		}
		seen[tc.name] = true
		if i > 0 && tc.phase < suite[i-1].phase {
			return fmt.Errorf("suite lists %s (phase %s) after %s (phase %s): every test must run before all tests of a later phase", tc.name, tc.phase, suite[i-1].name, suite[i-1].phase)
		}
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isTestName(fn.Name.Name) || fn.Name.Name == "TestMain" || fn.Name.Name == "TestE2E" {
				continue
			}
			return fmt.Errorf("%s: top-level test %s runs outside the ordered suite; make it a func test... and list it in suite (main_test.go)", fset.Position(fn.Pos()), fn.Name.Name)
		}
	}
	return nil
}

// isTestName is go test's rule: Test, then nothing or not a lower-case letter.
func isTestName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || !unicode.IsLower(r)
}
