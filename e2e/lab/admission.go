package lab

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The label every object the controller writes into a member carries
// (objects.LabelManagedBy / objects.ManagedByValue): what the admission
// rules below match, so nothing else of a cluster is touched.
const (
	ControllerObjectLabel = "app.kubernetes.io/managed-by"
	ControllerObjectValue = "xcc-dns-controller"
)

// RefusalMessage is what the ValidatingAdmissionPolicy of
// RefuseControllerWrites answers each write it denies.
const RefusalMessage = "e2e: this member refuses the xcc-dns controller's objects"

// controllerResources are the kinds the controller creates and updates in
// a member, as admission rules: ServiceImports, derived Services and
// imported EndpointSlices.
func controllerResources() []admissionregistrationv1.RuleWithOperations {
	rule := func(group, resource string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"},
				Resources: []string{resource}, Scope: ptr(admissionregistrationv1.NamespacedScope)},
		}
	}
	return []admissionregistrationv1.RuleWithOperations{
		rule("multicluster.x-k8s.io", "serviceimports"), rule("", "services"), rule("discovery.k8s.io", "endpointslices"),
	}
}

func controllerObjects() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{ControllerObjectLabel: ControllerObjectValue}}
}

// RefuseControllerWrites makes c's kube-apiserver deny every create and
// update of the controller's objects (ValidatingAdmissionPolicy name and
// its binding, no webhook) and waits until it does.
// AllowControllerWrites takes both away.
func RefuseControllerWrites(ctx context.Context, c *Cluster, name string) error {
	policies := c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	_, err := policies.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ObjectSelector:    controllerObjects(),
				NamespaceSelector: &metav1.LabelSelector{},
				ResourceRules:     namedRules(controllerResources()),
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: RefusalMessage, Reason: ptr(metav1.StatusReasonForbidden)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ValidatingAdmissionPolicy %s in %s: %w", name, c.Name, err)
	}
	_, err = c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ValidatingAdmissionPolicyBinding %s in %s: %w", name, c.Name, err)
	}
	// The API server loads a policy from its informer: wait until a
	// dry-run create of a labelled Service is denied.
	return waitFor(ctx, nil, time.Minute, "the policy "+name+" of "+c.Name+" in effect", func(ctx context.Context) error {
		err := probeControllerWrite(ctx, c, "refuse-probe")
		if err == nil {
			return errors.New("a labelled Service is still admitted")
		}
		if !apierrors.IsForbidden(err) {
			return err
		}
		return nil
	})
}

// AllowControllerWrites deletes what RefuseControllerWrites created and
// waits until a dry-run write of the controller's kind is admitted.
func AllowControllerWrites(ctx context.Context, c *Cluster, name string) error {
	err := c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ValidatingAdmissionPolicyBinding %s in %s: %w", name, c.Name, err)
	}
	err = c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ValidatingAdmissionPolicy %s in %s: %w", name, c.Name, err)
	}
	return waitFor(ctx, nil, time.Minute, "the policy "+name+" of "+c.Name+" gone", func(ctx context.Context) error {
		return probeControllerWrite(ctx, c, "allow-probe")
	})
}

// namedRules turns rules into the NamedRuleWithOperations a policy takes.
func namedRules(rules []admissionregistrationv1.RuleWithOperations) []admissionregistrationv1.NamedRuleWithOperations {
	out := make([]admissionregistrationv1.NamedRuleWithOperations, 0, len(rules))
	for _, r := range rules {
		out = append(out, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: r})
	}
	return out
}

// probeControllerWrite is a dry-run create, in c's default namespace, of
// a Service labelled as the controller's: admission runs, nothing is
// stored.
func probeControllerWrite(ctx context.Context, c *Cluster, name string) error {
	_, err := c.Client.CoreV1().Services(metav1.NamespaceDefault).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ControllerObjectLabel: ControllerObjectValue}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// SlowWebhook is a validating admission webhook served by the test
// process on 127.0.0.1 (the lab's API servers are local processes): it
// answers each review after Delay, or when the API server gives up the
// call, and always allows. It records when each call came and ended.
type SlowWebhook struct {
	Delay time.Duration
	// RefuseBytes, when set before Register, makes it refuse every
	// review (after Delay) with a message of that many bytes, escape
	// sequences among them: a member's admin refusing the controller's
	// writes with a hostile text.
	RefuseBytes int
	// URL is where the API server calls it; CAPEM the CA of its
	// certificate.
	URL   string
	CAPEM []byte

	srv *http.Server
	ln  net.Listener

	mu    sync.Mutex
	calls []WebhookCall
}

// WebhookCall is one review the webhook got.
type WebhookCall struct {
	Kind, Namespace, Name, Operation string
	Began, Ended                     time.Time
	// Ended is zero while the call runs. Cancelled: the API server ended
	// the call before Delay.
	Cancelled bool
}

// StartSlowWebhook serves a SlowWebhook with a certificate of a fresh CA
// (files in dir) until Close.
func StartSlowWebhook(dir string, delay time.Duration) (*SlowWebhook, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create dir of the webhook: %w", err)
	}
	p, err := newPKI(dir, "slow-webhook", loopback)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load the webhook's certificate: %w", err)
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(loopback, "0"), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("listen for the webhook: %w", err)
	}
	w := &SlowWebhook{Delay: delay, URL: "https://" + ln.Addr().String() + "/validate", CAPEM: p.CAPEM, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", w.review)
	w.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }()
	return w, nil
}

// maxReviewBytes bounds the body of one admission review.
const maxReviewBytes = 1 << 20

func (w *SlowWebhook) review(rw http.ResponseWriter, r *http.Request) {
	began := time.Now()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, maxReviewBytes)).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	call := WebhookCall{Kind: req.Kind.Kind, Namespace: req.Namespace, Name: req.Name, Operation: string(req.Operation), Began: began}
	if req.Name == "" {
		// A create with generateName only: the name is not known yet.
		call.Name = "(generated)"
	}
	w.mu.Lock()
	i := len(w.calls)
	w.calls = append(w.calls, call)
	w.mu.Unlock()
	cancelled := false
	select {
	case <-time.After(w.Delay):
	case <-r.Context().Done():
		cancelled = true
	}
	w.mu.Lock()
	w.calls[i].Ended, w.calls[i].Cancelled = time.Now(), cancelled
	w.mu.Unlock()
	review.Response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if w.RefuseBytes > 0 {
		msg := strings.Repeat("\x1b[2Jall Ready ", w.RefuseBytes/14+1)[:w.RefuseBytes]
		review.Response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: false,
			Result: &metav1.Status{Code: http.StatusForbidden, Message: msg}}
	}
	review.Request = nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}

// Calls are the reviews so far, in the order they came; Ended is zero
// for one still running.
func (w *SlowWebhook) Calls() []WebhookCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WebhookCall(nil), w.calls...)
}

// Close stops serving; calls in progress end at once.
func (w *SlowWebhook) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := w.srv.Shutdown(ctx); err != nil {
		w.srv.Close()
	}
}

// Register makes c's kube-apiserver call w, with timeoutSeconds and
// failurePolicy, on every create and update of the controller's objects
// (a ValidatingWebhookConfiguration name), and waits until it does.
// Unregister takes it away.
func (w *SlowWebhook) Register(ctx context.Context, c *Cluster, name string, timeoutSeconds int32, policy admissionregistrationv1.FailurePolicyType) error {
	_, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    name + ".e2e.xcc-dns.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr(w.URL), CABundle: w.CAPEM},
			Rules:                   controllerResources(),
			FailurePolicy:           ptr(policy),
			ObjectSelector:          controllerObjects(),
			SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr(timeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ValidatingWebhookConfiguration %s in %s: %w", name, c.Name, err)
	}
	// The API server loads the configuration from its informer: wait
	// until a dry-run create reaches the webhook (the probe itself gives
	// up after a while; the webhook records the call as it comes).
	probe := filepath.Base(name) + "-probe"
	return waitFor(ctx, nil, time.Minute, "the webhook "+name+" of "+c.Name+" called", func(ctx context.Context) error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_ = probeControllerWrite(pctx, c, probe)
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			for _, call := range w.Calls() {
				if call.Name == probe {
					return nil
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		return errors.New("the webhook was not called")
	})
}

// Unregister deletes the ValidatingWebhookConfiguration name from c.
func (w *SlowWebhook) Unregister(ctx context.Context, c *Cluster, name string) error {
	err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ValidatingWebhookConfiguration %s in %s: %w", name, c.Name, err)
	}
	return nil
}
