package lab

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

const (
	etcdStartTimeout = 60 * time.Second
	// etcdQuotaBytes bounds the shared etcd of the lab's API servers.
	etcdQuotaBytes = 2 << 30
)

// startEtcd starts the one etcd, in this process, that every API server of
// the lab stores its objects in (each under its own prefix).
func startEtcd(dir, logDir string) (*embed.Etcd, string, error) {
	return startEtcdAs("lab", dir, filepath.Join(logDir, "etcd.log"))
}

// startEtcdAs starts an embedded etcd called name, its data under dir and
// its log in logFile.
func startEtcdAs(name, dir, logFile string) (*embed.Etcd, string, error) {
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return nil, "", err
		}
		clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
		peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
		cfg := embed.NewConfig()
		cfg.Name = name
		cfg.Dir = filepath.Join(dir, fmt.Sprintf("etcd-%d", attempt))
		cfg.ListenClientUrls = []url.URL{clientURL}
		cfg.AdvertiseClientUrls = []url.URL{clientURL}
		cfg.ListenPeerUrls = []url.URL{peerURL}
		cfg.AdvertisePeerUrls = []url.URL{peerURL}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		cfg.QuotaBackendBytes = etcdQuotaBytes
		cfg.AutoCompactionMode = "periodic"
		cfg.AutoCompactionRetention = "5m"
		cfg.LogLevel = "warn"
		cfg.LogOutputs = []string{logFile}
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			lastErr = fmt.Errorf("start embedded etcd on %s: %w", clientURL.Host, err)
			continue
		}
		select {
		case <-e.Server.ReadyNotify():
			return e, clientURL.String(), nil
		case err := <-e.Err():
			e.Close()
			lastErr = fmt.Errorf("embedded etcd on %s: %w", clientURL.Host, err)
		case <-time.After(etcdStartTimeout):
			e.Close()
			return nil, "", fmt.Errorf("embedded etcd not ready within %s", etcdStartTimeout)
		}
	}
	return nil, "", lastErr
}
