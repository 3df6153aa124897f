// Package testfixture holds the builders and helpers the tests of several
// packages share: EndpointSlices and Services as the two sides write them,
// the objects the controller reads (GatewayDNS, kubeconfig Secrets, a
// Service's EndpointSlices, cluster.go), an API server that answers as a
// hostile workload cluster may, free ports, a real embedded etcd, DNS
// questions and answers as zone-file lines, and the Corefiles the tests
// run.
//
// It imports only leaf packages (contract, etcdserver, miekg/dns, the
// Kubernetes API types, client-go's clientcmd), so the tests inside
// serve, store, the controller's packages and the others can use it
// without an import cycle. Starting the whole record path
// (serve's syncer, etcd and an in-process CoreDNS) is in the sub-package
// dnsworld, which links CoreDNS and its plugins: only the tests that ask
// DNS import it.
//
// It is for tests only: nothing but tests and dnsworld imports it.
package testfixture
