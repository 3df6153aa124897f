package lab

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

const etcdDialTimeout = 5 * time.Second

// GatewayKeyPrefix is the etcd key prefix of the gateway records of cluster.
func GatewayKeyPrefix(cluster string) string {
	return fmt.Sprintf("/skydns/test/xcc/clusters/%s/%s/gateway/", ClusterNamespace, cluster)
}

// EtcdValues returns the values stored under prefix in the etcd at url
// (serve's embedded etcd), as `etcdctl get --prefix` shows them.
func EtcdValues(ctx context.Context, url, prefix string) ([]string, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: etcdDialTimeout, Logger: nopLogger()})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", url, err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, etcdDialTimeout)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("get %s from %s: %w", prefix, url, err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Value))
	}
	return out, nil
}

// WaitEtcdContains polls the etcd at url until a value under prefix
// contains s, and returns how long that took.
func WaitEtcdContains(ctx context.Context, url, prefix, s string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	err := waitFor(ctx, nil, timeout, fmt.Sprintf("%q under %s in %s", s, prefix, url), func(ctx context.Context) error {
		vals, err := EtcdValues(ctx, url, prefix)
		if err != nil {
			return err
		}
		for _, v := range vals {
			if strings.Contains(v, s) {
				return nil
			}
		}
		return fmt.Errorf("values %v", vals)
	})
	return time.Since(start), err
}
