// Package kubeconfig builds a client configuration from a kubeconfig that
// someone else wrote, such as a Cluster API <cluster>-kubeconfig Secret
// that any tenant able to create a Cluster can write.
//
// Such a kubeconfig is data, never instructions. Only the inline fields of
// its current context are used: the cluster's server (https), CA data and
// TLS server name, and the user's token or client certificate and key.
// Every field that would make the reader run a command, read a file, or
// send its requests and credentials somewhere else is refused with a
// *RefusedError naming it. Nothing else in the process is consulted: no
// files, no $KUBECONFIG, no defaults from the environment.
package kubeconfig

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Reasons a Cluster's kubeconfig Secret gives no connection, as every
// status that reports a workload cluster says them.
const (
	// ReasonMissing: the Secret is not there.
	ReasonMissing = "KubeconfigMissing"
	// ReasonInvalid: the Secret has no kubeconfig, or one that does not parse.
	ReasonInvalid = "KubeconfigInvalid"
	// ReasonRefused: the kubeconfig asks for what is never run or read
	// (exec, file paths, a proxy).
	ReasonRefused = "KubeconfigRefused"
)

// Policy is what the operator, never the kubeconfig's author, allows
// beyond inline data.
type Policy struct {
	// AllowExec names the exec credential plugin commands that may run. A
	// kubeconfig's exec.command must equal one of them exactly: "aws"
	// allows "aws" found on the reader's PATH, not "/tmp/aws". The
	// kubeconfig still chooses the command's arguments and environment.
	AllowExec []string
}

// RefusedError is a kubeconfig field that the reader will not act on.
type RefusedError struct {
	// Field is where the field is, in the kubeconfig's own terms, for
	// example `users["tenant"].exec`.
	Field string
	// Reason says what honouring it would do and what to use instead.
	Reason string
}

func (e *RefusedError) Error() string { return e.Field + " refused: " + e.Reason }

// Reasons of refused fields, shared by the fields of one kind.
const (
	reasonFilePath = "it names a file on the reader's machine; put the content inline (%s)"
	reasonRoute    = "the reader's requests and credentials would go through a host the kubeconfig chooses"
)

// selected is the current context of a kubeconfig and what it names.
type selected struct {
	clusterName string
	cluster     *clientcmdapi.Cluster
	userName    string
	user        *clientcmdapi.AuthInfo
}

// RESTConfig parses data and returns a client configuration for its current
// context built from inline fields only. A kubeconfig that cannot be used
// (unparsable, no current context, a context naming a missing cluster or
// user) is an error; one that asks for what p does not allow is an error
// wrapping one *RefusedError per refused field (errors.As finds the first).
// Contexts, clusters and users that the current context does not name are
// never read, so they are neither used nor refused.
func RESTConfig(data []byte, p Policy) (*rest.Config, error) {
	s, err := current(data)
	if err != nil {
		return nil, err
	}
	if err := s.check(p); err != nil {
		return nil, err
	}
	return s.restConfig(), nil
}

// Server returns the server URL of data's current context, as written.
func Server(data []byte) (string, error) {
	s, err := current(data)
	if err != nil {
		return "", err
	}
	return s.cluster.Server, nil
}

// current parses data without resolving any path and finds its current
// context's cluster and user.
func current(data []byte) (selected, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return selected{}, fmt.Errorf("parse kubeconfig: %w", err)
	}
	if kc.CurrentContext == "" {
		return selected{}, errors.New("kubeconfig has no current-context")
	}
	ctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok || ctx == nil {
		return selected{}, fmt.Errorf("current-context %q is not in contexts", kc.CurrentContext)
	}
	s := selected{clusterName: ctx.Cluster, userName: ctx.AuthInfo}
	if s.cluster = kc.Clusters[ctx.Cluster]; s.cluster == nil {
		return selected{}, fmt.Errorf("context %q names cluster %q, which is not in clusters", kc.CurrentContext, ctx.Cluster)
	}
	// A context without a user is anonymous; one naming a missing user is a mistake.
	s.user = &clientcmdapi.AuthInfo{}
	if ctx.AuthInfo != "" {
		if s.user = kc.AuthInfos[ctx.AuthInfo]; s.user == nil {
			return selected{}, fmt.Errorf("context %q names user %q, which is not in users", kc.CurrentContext, ctx.AuthInfo)
		}
	}
	return s, nil
}

// check returns every refusal and every unusable field of s under p.
func (s selected) check(p Policy) error {
	var errs []error
	refuse := func(field, reason string) {
		errs = append(errs, &RefusedError{Field: field, Reason: reason})
	}
	c, cf := s.cluster, fmt.Sprintf("clusters[%q].", s.clusterName)
	u, uf := s.user, fmt.Sprintf("users[%q].", s.userName)

	switch srv, err := url.Parse(c.Server); {
	case c.Server == "":
		errs = append(errs, fmt.Errorf("%sserver is empty", cf))
	case err != nil:
		errs = append(errs, fmt.Errorf("%sserver: %w", cf, err))
	case srv.Scheme != "https":
		// Without TLS the credentials cross the network in clear and the
		// server is not authenticated: anyone on the path could take them.
		refuse(cf+"server", fmt.Sprintf("scheme %q: only https is allowed", srv.Scheme))
	case srv.Host == "":
		errs = append(errs, fmt.Errorf("%sserver %q has no host", cf, c.Server))
	case srv.User != nil:
		refuse(cf+"server", "user information in the URL is basic authentication; use a token or client certificate")
	}
	if c.InsecureSkipTLSVerify {
		refuse(cf+"insecure-skip-tls-verify", "the server would not be authenticated, so anyone on the path could take the credentials; use certificate-authority-data")
	}
	if c.CertificateAuthority != "" {
		refuse(cf+"certificate-authority", fmt.Sprintf(reasonFilePath, "certificate-authority-data"))
	}
	if c.ProxyURL != "" {
		refuse(cf+"proxy-url", reasonRoute)
	}

	if u.Exec != nil {
		if u.Exec.Command == "" || !slices.Contains(p.AllowExec, u.Exec.Command) {
			allowed := "no command is allowed"
			if len(p.AllowExec) > 0 {
				allowed = "allowed: " + strings.Join(p.AllowExec, ", ")
			}
			refuse(uf+"exec", fmt.Sprintf("it would run the command %q on the reader's machine (%s); use token or client-certificate-data", u.Exec.Command, allowed))
		}
	}
	if u.AuthProvider != nil {
		refuse(uf+"auth-provider", fmt.Sprintf("auth provider %q runs credential code in the reader; use token or client-certificate-data", u.AuthProvider.Name))
	}
	if u.TokenFile != "" {
		refuse(uf+"tokenFile", "the reader would send the content of one of its files, such as its own ServiceAccount token, to the server; put the token inline (token)")
	}
	if u.ClientCertificate != "" {
		refuse(uf+"client-certificate", fmt.Sprintf(reasonFilePath, "client-certificate-data"))
	}
	if u.ClientKey != "" {
		refuse(uf+"client-key", fmt.Sprintf(reasonFilePath, "client-key-data"))
	}
	if u.Username != "" || u.Password != "" {
		refuse(uf+"username/password", "basic authentication is not supported; use a token or client certificate")
	}
	if u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0 {
		refuse(uf+"act-as", "impersonation would make the reader act as another identity; give the credentials of the identity to use")
	}
	if (len(u.ClientCertificateData) == 0) != (len(u.ClientKeyData) == 0) {
		errs = append(errs, fmt.Errorf("%sclient-certificate-data and client-key-data: one without the other", uf))
	}
	return errors.Join(errs...)
}

// restConfig builds the configuration from the fields check allows. The
// zero rest.Config has no exec provider, auth provider, token file, proxy
// or impersonation, so what is not set here is not done.
func (s selected) restConfig() *rest.Config {
	c, u := s.cluster, s.user
	cfg := &rest.Config{
		Host:               c.Server,
		BearerToken:        u.Token,
		DisableCompression: c.DisableCompression,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: c.TLSServerName,
			CAData:     slices.Clone(c.CertificateAuthorityData),
			CertData:   slices.Clone(u.ClientCertificateData),
			KeyData:    slices.Clone(u.ClientKeyData),
		},
	}
	if e := u.Exec; e != nil {
		cfg.ExecProvider = &clientcmdapi.ExecConfig{
			Command:            e.Command,
			Args:               slices.Clone(e.Args),
			Env:                slices.Clone(e.Env),
			APIVersion:         e.APIVersion,
			InstallHint:        e.InstallHint,
			ProvideClusterInfo: e.ProvideClusterInfo,
			// Nobody is at a terminal; the plugin must not wait for one.
			InteractiveMode:  clientcmdapi.NeverExecInteractiveMode,
			StdinUnavailable: true,
			// client-go checks the command again before each run.
			PluginPolicy: clientcmdapi.PluginPolicy{
				PolicyType: clientcmdapi.PluginPolicyAllowlist,
				Allowlist:  []clientcmdapi.AllowlistEntry{{Command: e.Command}},
			},
		}
	}
	return cfg
}
