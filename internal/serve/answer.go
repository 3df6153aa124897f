package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/miekg/dns"
	"k8s.io/client-go/kubernetes"

	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/dnsanswer"
)

// Defaults of /answer.
const (
	// DefaultAnswerDNSAddress is the CoreDNS container of serve's own pod:
	// loopback and the chart's ports.dns.
	DefaultAnswerDNSAddress = "127.0.0.1:5353"
	// DefaultAnswerClusterDNSService is the cluster DNS Service whose
	// ClusterIP /answer asks: kubeadm's and most distributions' name.
	DefaultAnswerClusterDNSService = "kube-system/kube-dns"
	// AnswerPath is where serve's HTTP server answers.
	AnswerPath = "/answer"
	// answerInFlight bounds the requests answered at once; more get 429.
	answerInFlight = 4
)

// AnswerResponse is the body of a 200 from /answer.
type AnswerResponse struct {
	Name    string             `json:"name"`
	Type    string             `json:"type"`
	Answers []dnsanswer.Answer `json:"answers"`
}

// answerHandler is /answer?name=N&type=T: what this pod's CoreDNS and the
// cluster DNS answer now for a name of serve's zones. Any pod that reaches
// the HTTP port can call it, so it asks only two fixed servers, only names
// of the zones, only the types of dnsanswer.Types, a few at a time.
type answerHandler struct {
	zones []string
	// local is the CoreDNS beside serve (host:port); clusterDNS the
	// Service (namespace/name) whose ClusterIP is asked, "" for none.
	local      string
	clusterDNS string
	kube       kubernetes.Interface
	inFlight   chan struct{}
}

func newAnswerHandler(kube kubernetes.Interface, o Options) (*answerHandler, error) {
	h := &answerHandler{zones: []string{o.Domain, o.ClusterSetZone}, local: o.AnswerDNSAddress, clusterDNS: o.AnswerClusterDNSService,
		kube: kube, inFlight: make(chan struct{}, answerInFlight)}
	if h.local != "" {
		if _, _, err := net.SplitHostPort(h.local); err != nil {
			return nil, fmt.Errorf("--answer-dns-address %q: %w", h.local, err)
		}
	}
	if h.clusterDNS != "" {
		if _, _, err := corefile.SplitRef(h.clusterDNS); err != nil {
			return nil, fmt.Errorf("--answer-cluster-dns-service: %w", err)
		}
	}
	return h, nil
}

func (h *answerHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	select {
	case h.inFlight <- struct{}{}:
		defer func() { <-h.inFlight }()
	default:
		http.Error(w, fmt.Sprintf("%d questions under way: ask again later", answerInFlight), http.StatusTooManyRequests)
		return
	}
	q := r.URL.Query()
	qtype, err := dnsanswer.ParseType(q.Get("type"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name, err := dnsanswer.CheckName(q.Get("name"), h.zones)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out := AnswerResponse{Name: name, Type: dns.TypeToString[qtype], Answers: make([]dnsanswer.Answer, 2)}
	var wg sync.WaitGroup
	wg.Go(func() {
		if h.local == "" {
			out.Answers[0] = dnsanswer.Answer{Server: "xcc-dns", Error: "not asked: --answer-dns-address is empty"}
			return
		}
		out.Answers[0] = dnsanswer.Ask(r.Context(), "xcc-dns", h.local, name, qtype, dnsanswer.DefaultTimeout)
	})
	wg.Go(func() { out.Answers[1] = h.askClusterDNS(r.Context(), name, qtype) })
	wg.Wait()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// askClusterDNS asks the ClusterIP of the cluster DNS Service, read now:
// serve's pod resolves with the node's resolver (dnsPolicy Default), not
// through it.
func (h *answerHandler) askClusterDNS(ctx context.Context, name string, qtype uint16) dnsanswer.Answer {
	const server = "cluster DNS"
	if h.clusterDNS == "" {
		return dnsanswer.Answer{Server: server, Error: "not asked: --answer-cluster-dns-service is empty"}
	}
	addr, err := h.clusterDNSAddress(ctx)
	if err != nil {
		return dnsanswer.Answer{Server: server, Error: err.Error()}
	}
	return dnsanswer.Ask(ctx, server, addr, name, qtype, dnsanswer.DefaultTimeout)
}

// clusterDNSAddress is the ClusterIP and DNS port of the cluster DNS
// Service, picked as patch-corefile picks the xcc-dns Service's
// (corefile.ServiceAddress).
func (h *answerHandler) clusterDNSAddress(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dnsanswer.DefaultTimeout)
	defer cancel()
	return corefile.ServiceAddress(ctx, h.kube, h.clusterDNS)
}
