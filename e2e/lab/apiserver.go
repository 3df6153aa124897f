package lab

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	apiserverReadyTimeout = 120 * time.Second
	// serviceCIDR is the ClusterIP range of every lab cluster (never routed:
	// nothing in the lab sends traffic to a ClusterIP).
	serviceCIDR = "10.96.0.0/16"
	adminUser   = "lab-admin"
	tokenBytes  = 16
)

// Cluster is one kube-apiserver of the lab.
type Cluster struct {
	Name string
	// Host and Port are where the API server listens (127.0.0.1).
	Host string
	Port int
	// Kubeconfig is the admin kubeconfig file; KubeconfigBytes its content.
	Kubeconfig      string
	KubeconfigBytes []byte

	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface

	dir     string
	bin     string
	etcdURL string
	pki     *pki
	token   string
	proc    *Process
	logDir  string
}

// URL is the API server's https URL.
func (c *Cluster) URL() string { return fmt.Sprintf("https://%s:%d", c.Host, c.Port) }

// Process is the running kube-apiserver (nil when stopped).
func (c *Cluster) Process() *Process { return c.proc }

func newCluster(name, dir, bin, etcdURL, logDir, host string, extraIPs ...net.IP) (*Cluster, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create dir of %s: %w", name, err)
	}
	p, err := newPKI(dir, name, host, extraIPs...)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, tokenBytes)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("admin token of %s: %w", name, err)
	}
	c := &Cluster{Name: name, Host: "127.0.0.1", dir: dir, bin: bin, etcdURL: etcdURL, pki: p, token: hex.EncodeToString(tok), logDir: logDir}
	// The admin token belongs to system:masters, so RBAC lets it do anything.
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", c.token, adminUser, adminUser)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, fmt.Errorf("write token file of %s: %w", name, err)
	}
	return c, nil
}

// apiServer is what differs between the lab's API servers.
type apiServer struct {
	etcdURL, name, address string
	port                   int
	dir                    string // holds certs/ and tokens.csv
	pki                    *pki
	issuer                 string // the service-account issuer's cluster domain
	serviceCIDR            string
}

// apiServerFlags are the flags of every API server of the labs: its own
// etcd prefix, serving certificate, static tokens, RBAC and service-account
// signing, then extra.
func apiServerFlags(a apiServer, extra ...string) []string {
	return append([]string{
		"--etcd-servers=" + a.etcdURL,
		"--etcd-prefix=/registry-" + a.name,
		"--bind-address=" + a.address,
		"--advertise-address=" + a.address,
		"--secure-port=" + strconv.Itoa(a.port),
		"--cert-dir=" + filepath.Join(a.dir, "certs"),
		"--tls-cert-file=" + a.pki.CertFile,
		"--tls-private-key-file=" + a.pki.KeyFile,
		"--client-ca-file=" + a.pki.CAFile,
		"--token-auth-file=" + filepath.Join(a.dir, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-account-key-file=" + a.pki.SAPubFile,
		"--service-account-signing-key-file=" + a.pki.SAKeyFile,
		"--service-account-issuer=https://kubernetes.default.svc." + a.issuer,
		"--service-cluster-ip-range=" + a.serviceCIDR,
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}, extra...)
}

// start runs the kube-apiserver on a free port (retrying on another port if
// it fails to bind) and waits for /readyz.
func (c *Cluster) start(ctx context.Context) error {
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		c.Port = port
		args := apiServerFlags(apiServer{etcdURL: c.etcdURL, name: c.Name, address: "127.0.0.1", port: port, dir: c.dir,
			pki: c.pki, issuer: c.Name, serviceCIDR: serviceCIDR},
			// The lab has no nodes and no routable address to publish
			// for the kubernetes Service.
			"--endpoint-reconciler-type=none")
		c.proc, err = startProcess(c.logDir, "kube-apiserver-"+c.Name, nil, c.bin, args...)
		if err != nil {
			return err
		}
		err = waitFor(ctx, c.proc, apiserverReadyTimeout, "kube-apiserver of "+c.Name+" /readyz", c.readyz)
		if err == nil {
			return c.clients()
		}
		lastErr = err
		c.proc.Stop()
		if !strings.Contains(c.proc.Tail(tailLines), "address already in use") {
			return err
		}
	}
	return lastErr
}

// readyz asks the API server's /readyz with the admin token.
func (c *Cluster) readyz(ctx context.Context) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.CAPEM)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL()+"/readyz", nil)
	if err != nil {
		return fmt.Errorf("build /readyz request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET /readyz: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// clients writes the admin kubeconfig and builds the clients from it.
func (c *Cluster) clients() error {
	kc := KubeconfigFor(c.Name, c.URL(), c.pki.CAPEM, c.token)
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig of %s: %w", c.Name, err)
	}
	c.Kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	c.KubeconfigBytes = data
	if err := os.WriteFile(c.Kubeconfig, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig of %s: %w", c.Name, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return fmt.Errorf("REST config of %s: %w", c.Name, err)
	}
	c.Config = cfg
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("clientset of %s: %w", c.Name, err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return fmt.Errorf("dynamic client of %s: %w", c.Name, err)
	}
	return nil
}

// Stop stops the API server (SIGTERM, then SIGKILL).
func (c *Cluster) Stop() {
	if c.proc != nil {
		c.proc.Stop()
	}
}

// Restart starts the API server again on the same port, etcd prefix and
// certificates, and waits for /readyz.
func (c *Cluster) Restart(ctx context.Context) error {
	c.Stop()
	args := c.proc.cmd.Args[1:]
	var err error
	c.proc, err = startProcess(c.logDir, "kube-apiserver-"+c.Name, nil, c.bin, args...)
	if err != nil {
		return err
	}
	return waitFor(ctx, c.proc, apiserverReadyTimeout, "kube-apiserver of "+c.Name+" /readyz", c.readyz)
}

// KubeconfigFor returns a kubeconfig with one cluster, user and context,
// all named name, authenticating with a bearer token.
func KubeconfigFor(name, server string, caPEM []byte, token string) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return kc
}
