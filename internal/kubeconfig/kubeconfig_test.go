package kubeconfig_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
)

const (
	// secret is what a refused kubeconfig tries to get sent: it is in the
	// token file, the exec plugin's output, the password and so on.
	secret      = "xcc-test-secret-7f3a9c"
	inlineToken = "inline-token"
	// pluginName is an exec plugin the operator allows in one case; it
	// prints pluginToken.
	pluginName   = "xcc-test-credential"
	pluginToken  = "plugin-token"
	clientCN     = "tenant-user"
	user         = "tenant"
	cluster      = "workload"
	contextName  = "tenant@workload"
	execAPI      = "client.authentication.k8s.io/v1"
	requestLimit = 5 * time.Second
)

// request is what a recorder saw of one request.
type request struct {
	method, path, authorization, clientCN string
	// all is the request line, every header (basic authentication decoded)
	// and the body, to look for secret.
	all string
}

// recorder is an HTTP handler that remembers every request it receives
// and answers GET /version as an API server would.
type recorder struct {
	mu   sync.Mutex
	seen []request
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var all strings.Builder
	fmt.Fprintf(&all, "%s %s %s\n", req.Method, req.Host, req.URL)
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&all, "%s: %s\n", k, strings.Join(req.Header[k], ", "))
	}
	if name, password, ok := req.BasicAuth(); ok {
		fmt.Fprintf(&all, "basic authentication: %s:%s\n", name, password)
	}
	all.Write(body)
	seen := request{method: req.Method, path: req.URL.Path, authorization: req.Header.Get("Authorization"), all: all.String()}
	if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
		seen.clientCN = req.TLS.PeerCertificates[0].Subject.CommonName
	}
	r.mu.Lock()
	r.seen = append(r.seen, seen)
	r.mu.Unlock()

	if req.Method == http.MethodGet && req.URL.Path == "/version" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.1"}`)
		return
	}
	http.NotFound(w, req)
}

func (r *recorder) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.seen...)
}

// fixture is an API server to reach, a proxy that must never be used, and
// files on this machine that a kubeconfig must never make the reader use.
type fixture struct {
	api, proxy         *httptest.Server
	apiSeen, proxySeen *recorder
	caPEM              []byte
	certPEM, keyPEM    []byte
	dir                string
	// marker is the file a refused exec plugin would create.
	marker string
	// caFile, certFile and keyFile hold working credentials; tokenFile holds secret.
	caFile, certFile, keyFile, tokenFile string
	// pluginPath is pluginName, in a directory on PATH.
	pluginPath string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{apiSeen: &recorder{}, proxySeen: &recorder{}, dir: t.TempDir()}
	f.api = httptest.NewUnstartedServer(f.apiSeen)
	// Ask for a client certificate (without verifying it) to see which one is sent.
	f.api.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	f.api.StartTLS()
	t.Cleanup(f.api.Close)
	f.proxy = httptest.NewServer(f.proxySeen)
	t.Cleanup(f.proxy.Close)

	f.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.api.Certificate().Raw})
	f.certPEM, f.keyPEM = clientCertificate(t)
	f.marker = filepath.Join(f.dir, "pwned")
	f.caFile = writeFile(t, f.dir, "ca.crt", f.caPEM, 0o600)
	f.certFile = writeFile(t, f.dir, "client.crt", f.certPEM, 0o600)
	f.keyFile = writeFile(t, f.dir, "client.key", f.keyPEM, 0o600)
	f.tokenFile = writeFile(t, f.dir, "token", []byte(secret), 0o600)

	bin := filepath.Join(f.dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	f.pluginPath = writeFile(t, bin, pluginName, []byte(
		"#!/bin/sh\necho '"+execCredential(pluginToken)+"'\n"), 0o700)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return f
}

// base is a kubeconfig that works: inline server, CA data and token.
func (f *fixture) base() *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[cluster] = &clientcmdapi.Cluster{Server: f.api.URL, CertificateAuthorityData: f.caPEM}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: inlineToken}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	kc.CurrentContext = contextName
	return kc
}

// shell is an exec plugin that creates the marker and hands out secret.
func (f *fixture) shell() *clientcmdapi.ExecConfig {
	return &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: execAPI, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		Args: []string{"-c", "touch " + f.marker + "; echo '" + execCredential(secret) + "'"}}
}

func execCredential(token string) string {
	return `{"apiVersion":"` + execAPI + `","kind":"ExecCredential","status":{"token":"` + token + `"}}`
}

// TestRESTConfig checks what a kubeconfig may carry and what it is refused.
// It is long for its table, one row per case, and one loop over it.
func TestRESTConfig(t *testing.T) {
	withSecretToken := func(f *fixture, kc *clientcmdapi.Config) { kc.AuthInfos[user].Token = secret }
	cases := []struct {
		name   string
		edit   func(f *fixture, kc *clientcmdapi.Config)
		policy kubeconfig.Policy
		// refused is a field the error must name, as a *RefusedError;
		// invalid a part of any other error; neither: a working config.
		refused, invalid string
		// wantAuth and wantCN are what the API server must see when the
		// config works; wantRequestErr that the request must fail.
		wantAuth, wantCN string
		wantRequestErr   string
	}{
		{name: "inline token", wantAuth: "Bearer " + inlineToken},
		{name: "inline client certificate", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: f.certPEM, ClientKeyData: f.keyPEM}
		}, wantCN: clientCN},
		{name: "tls-server-name in the certificate", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.Clusters[cluster].TLSServerName = "example.com"
		}, wantAuth: "Bearer " + inlineToken},
		{name: "tls-server-name not in the certificate", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.Clusters[cluster].TLSServerName = "other.example"
		}, wantRequestErr: "certificate"},
		{name: "exec of another, unused user is never read", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Exec: f.shell()}
			kc.Contexts["admin@workload"] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: "admin"}
		}, wantAuth: "Bearer " + inlineToken},
		{name: "exec command the operator allows", policy: kubeconfig.Policy{AllowExec: []string{"aws", pluginName}},
			edit: func(f *fixture, kc *clientcmdapi.Config) {
				kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: pluginName, APIVersion: execAPI, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
			}, wantAuth: "Bearer " + pluginToken},

		{name: "exec", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Exec: f.shell()}
		}, refused: `users["tenant"].exec`},
		{name: "exec command not in the allowed list", policy: kubeconfig.Policy{AllowExec: []string{pluginName}},
			edit: func(f *fixture, kc *clientcmdapi.Config) {
				kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Exec: f.shell()}
			}, refused: `users["tenant"].exec`},
		{name: "exec of an allowed name by another path", policy: kubeconfig.Policy{AllowExec: []string{pluginName}},
			edit: func(f *fixture, kc *clientcmdapi.Config) {
				kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: f.pluginPath, APIVersion: execAPI, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
			}, refused: `users["tenant"].exec`},
		{name: "tokenFile", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos[user] = &clientcmdapi.AuthInfo{TokenFile: f.tokenFile}
		}, refused: `users["tenant"].tokenFile`},
		{name: "certificate-authority file", edit: func(f *fixture, kc *clientcmdapi.Config) {
			withSecretToken(f, kc)
			kc.Clusters[cluster].CertificateAuthorityData = nil
			kc.Clusters[cluster].CertificateAuthority = f.caFile
		}, refused: `clusters["workload"].certificate-authority`},
		{name: "client-certificate file", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: f.certFile, ClientKeyData: f.keyPEM, Token: secret}
		}, refused: `users["tenant"].client-certificate`},
		{name: "client-key file", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: f.certPEM, ClientKey: f.keyFile, Token: secret}
		}, refused: `users["tenant"].client-key`},
		{name: "proxy-url", edit: func(f *fixture, kc *clientcmdapi.Config) {
			withSecretToken(f, kc)
			kc.Clusters[cluster].ProxyURL = f.proxy.URL
		}, refused: `clusters["workload"].proxy-url`},
		{name: "insecure-skip-tls-verify", edit: func(f *fixture, kc *clientcmdapi.Config) {
			withSecretToken(f, kc)
			kc.Clusters[cluster].CertificateAuthorityData = nil
			kc.Clusters[cluster].InsecureSkipTLSVerify = true
		}, refused: `clusters["workload"].insecure-skip-tls-verify`},
		{name: "auth-provider", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos[user] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{
				Name: "oidc", Config: map[string]string{"id-token": secret, "idp-issuer-url": f.api.URL, "client-id": "x"}}}
		}, refused: `users["tenant"].auth-provider`},
		{name: "username and password", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Username: user, Password: secret}
		}, refused: `users["tenant"].username/password`},
		{name: "impersonation", edit: func(f *fixture, kc *clientcmdapi.Config) {
			withSecretToken(f, kc)
			kc.AuthInfos[user].Impersonate = "system:admin"
			kc.AuthInfos[user].ImpersonateGroups = []string{"system:masters"}
		}, refused: `users["tenant"].act-as`},
		{name: "http server", edit: func(f *fixture, kc *clientcmdapi.Config) {
			withSecretToken(f, kc)
			kc.Clusters[cluster].Server = f.proxy.URL
		}, refused: `clusters["workload"].server`},
		{name: "user information in the server URL", edit: func(f *fixture, kc *clientcmdapi.Config) {
			u, _ := url.Parse(f.api.URL)
			u.User = url.UserPassword(user, secret)
			kc.Clusters[cluster].Server = u.String()
			kc.AuthInfos[user].Token = ""
		}, refused: `clusters["workload"].server`},

		{name: "no current-context", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.CurrentContext = ""
		}, invalid: "no current-context"},
		{name: "current-context missing", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.CurrentContext = "gone"
		}, invalid: `current-context "gone"`},
		{name: "context names a missing cluster", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.Contexts[contextName].Cluster = "gone"
		}, invalid: `cluster "gone"`},
		{name: "context names a missing user", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.Contexts[contextName].AuthInfo = "gone"
		}, invalid: `user "gone"`},
		{name: "client certificate without its key", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: f.certPEM}
		}, invalid: "one without the other"},
		{name: "no server", edit: func(f *fixture, kc *clientcmdapi.Config) {
			kc.Clusters[cluster].Server = ""
		}, invalid: "server is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			kc := f.base()
			if tc.edit != nil {
				tc.edit(f, kc)
			}
			data, err := clientcmd.Write(*kc)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := kubeconfig.RESTConfig(data, tc.policy)
			var refused *kubeconfig.RefusedError
			switch {
			case tc.refused != "":
				if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("error %v, want one refusing %s", err, tc.refused)
				}
			case tc.invalid != "":
				if err == nil || errors.As(err, &refused) || !strings.Contains(err.Error(), tc.invalid) {
					t.Errorf("error %v, want one saying %q (and no refusal)", err, tc.invalid)
				}
			case err != nil:
				t.Fatalf("RESTConfig: %v", err)
			}

			if cfg != nil {
				// Use what was built, as the controller would: a kubeconfig
				// accepted by mistake shows its harm in the checks below.
				reqErr := serverVersion(cfg)
				if tc.refused == "" && tc.invalid == "" {
					f.checkUse(t, reqErr, tc.wantAuth, tc.wantCN, tc.wantRequestErr)
				}
			}
			if _, err := os.Stat(f.marker); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the exec plugin ran: %s exists (%v)", f.marker, err)
			}
			for _, r := range append(f.apiSeen.requests(), f.proxySeen.requests()...) {
				if strings.Contains(r.all, secret) {
					t.Errorf("a request carried the secret:\n%s", r.all)
				}
			}
			if seen := f.proxySeen.requests(); len(seen) > 0 {
				t.Errorf("the proxy (or plain http server) saw %d request(s): %q", len(seen), seen[0].all)
			}
			if seen := f.apiSeen.requests(); err != nil && len(seen) > 0 {
				t.Errorf("a refused kubeconfig reached the API server: %q", seen[0].all)
			}
		})
	}
}

// checkUse checks what the API server saw of one GET /version.
func (f *fixture) checkUse(t *testing.T, reqErr error, wantAuth, wantCN, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if reqErr == nil || !strings.Contains(reqErr.Error(), wantErr) {
			t.Errorf("request error %v, want one about %q", reqErr, wantErr)
		}
		return
	}
	if reqErr != nil {
		t.Errorf("GET /version: %v", reqErr)
	}
	seen := f.apiSeen.requests()
	if len(seen) != 1 {
		t.Fatalf("API server saw %d requests, want 1: %+v", len(seen), seen)
	}
	if got := seen[0]; got.method != http.MethodGet || got.path != "/version" || got.authorization != wantAuth || got.clientCN != wantCN {
		t.Errorf("API server saw %s %s Authorization %q client certificate %q, want GET /version %q %q",
			got.method, got.path, got.authorization, got.clientCN, wantAuth, wantCN)
	}
}

// serverVersion makes one request through a client built from cfg.
func serverVersion(cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = requestLimit
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	_, err = dc.ServerVersion()
	return err
}

func TestRESTConfigGarbage(t *testing.T) {
	for _, data := range []string{"", "not: [a kubeconfig", "kind: Config\napiVersion: v1\n"} {
		_, err := kubeconfig.RESTConfig([]byte(data), kubeconfig.Policy{})
		var refused *kubeconfig.RefusedError
		if err == nil || errors.As(err, &refused) {
			t.Errorf("RESTConfig(%q): error %v, want an error that is not a refusal", data, err)
		}
	}
}

func TestServer(t *testing.T) {
	f := newFixture(t)
	kc := f.base()
	// Server only reads the address, so even a refused kubeconfig has one.
	kc.AuthInfos[user].Exec = f.shell()
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := kubeconfig.Server(data)
	if err != nil || got != f.api.URL {
		t.Errorf("Server = %q, %v; want %q", got, err, f.api.URL)
	}
	if _, err := kubeconfig.Server([]byte("kind: Config\napiVersion: v1\n")); err == nil {
		t.Error("Server of a kubeconfig without a current context: no error")
	}
}

// clientCertificate returns a self-signed client certificate and its key, PEM.
func clientCertificate(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: clientCN},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func writeFile(t *testing.T, dir, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	return path
}
