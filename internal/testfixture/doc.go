// Package testfixture holds the builders and helpers the tests of several
// packages share: EndpointSlices and Services as the two sides write them,
// free ports, a real embedded etcd, DNS questions and answers as zone-file
// lines, and the Corefiles the tests run.
//
// It imports only leaf packages (contract, etcdserver, miekg/dns, the
// Kubernetes API types), so the tests inside serve, store and the others
// can use it without an import cycle. Starting the whole record path
// (serve's syncer, etcd and an in-process CoreDNS) is in the sub-package
// dnsworld, which links CoreDNS and its plugins: only the tests that ask
// DNS import it.
//
// It is for tests only: nothing but tests and dnsworld imports it.
package testfixture
