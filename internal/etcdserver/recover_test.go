package etcdserver

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// backendCommit is longer than etcd's default backend batch interval
// (100 ms), after which a write is in the database file.
const backendCommit = 120 * time.Millisecond

func testConfig(dir string) Config {
	return Config{DataDir: dir, ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", LogLevel: "error", StartTimeout: 20 * time.Second}
}

func startClient(t *testing.T, cfg Config) (*Server, *clientv3.Client) {
	t.Helper()
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		srv.Close()
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return srv, cli
}

// A data directory etcd cannot read back is moved aside and etcd starts
// empty, instead of crashing at every start (a corrupt database makes etcd
// panic) or failing for good (a torn write-ahead log).
func TestUnreadableDataIsSetAside(t *testing.T) {
	for name, corrupt := range map[string]func(t *testing.T, dir string){
		"database": func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, memberDir, "snap", "db"), []byte("not a database"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"write-ahead log": func(t *testing.T, dir string) {
			wals, _ := filepath.Glob(filepath.Join(dir, memberDir, "wal", "*.wal"))
			if len(wals) == 0 {
				t.Fatal("no wal file")
			}
			f, err := os.OpenFile(wals[0], os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("torn torn torn torn torn torn"), 100); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			srv, err := Start(context.Background(), testConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			srv.Close()
			corrupt(t, dir)

			_, cli := startClient(t, testConfig(dir))
			if _, err := cli.Put(context.Background(), "/skydns/test/xcc/a", "v"); err != nil {
				t.Errorf("put after the rebuild: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, memberDir+asideSuffix)); err != nil {
				t.Errorf("the unreadable member directory was not kept aside: %v", err)
			}
		})
	}
}

// A start that fails for a reason other than the data (here: the client
// port is taken) leaves the data alone.
func TestStartFailureKeepsTheData(t *testing.T) {
	dir := t.TempDir()
	srv, err := Start(context.Background(), testConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := testConfig(dir)
	cfg.ClientURL = "http://" + l.Addr().String()
	if _, err := Start(context.Background(), cfg); err == nil {
		t.Fatal("start on a taken port: want an error")
	}
	if _, err := os.Stat(filepath.Join(dir, memberDir+asideSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data moved aside after a port conflict: %v", err)
	}
}

// NOSPACE refuses every write and survives restarts; RecoverSpace clears
// it when history, not live data, filled the quota.
func TestRecoverSpace(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.QuotaBytes = 8 << 20
	srv, cli := startClient(t, cfg)
	ctx := context.Background()
	big := strings.Repeat("x", 512<<10)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = cli.Put(ctx, "/skydns/test/xcc/churn", big)
	}
	if !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("filling the quota with history: %v, want NOSPACE", err)
	}
	had, err := RecoverSpace(ctx, cli, srv.Endpoints()[0])
	if err != nil || !had {
		t.Fatalf("RecoverSpace = %v, %v; want an alarm cleared", had, err)
	}
	if _, err := cli.Put(ctx, "/skydns/test/xcc/a", "v"); err != nil {
		t.Errorf("put after recovery: %v", err)
	}
	if had, err := RecoverSpace(ctx, cli, srv.Endpoints()[0]); err != nil || had {
		t.Errorf("RecoverSpace without an alarm = %v, %v", had, err)
	}
}

// TestTrimSpaceKeepsTheQuota: the same churn that fills an 8 MiB quota in
// TestRecoverSpace never raises the alarm when TrimSpace runs between
// writes, and a database under half the quota is left alone.
//
// A put reaches the database file, and the size Status reports, at the
// backend's next batch commit (every 100 ms): puts of 512 KiB in a tight
// loop outran it, a dozen of them unseen by TrimSpace, and the quota was
// passed. serve's writes come in reconciles far apart; so do these.
func TestTrimSpaceKeepsTheQuota(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.QuotaBytes = 8 << 20
	srv, cli := startClient(t, cfg)
	ctx := context.Background()
	endpoint := srv.Endpoints()[0]
	if trimmed, err := TrimSpace(ctx, cli, endpoint, cfg.QuotaBytes); err != nil || trimmed {
		t.Fatalf("TrimSpace of an empty database = %v, %v; want nothing done", trimmed, err)
	}
	big := strings.Repeat("x", 512<<10)
	trims := 0
	for i := 0; i < 40; i++ {
		if _, err := cli.Put(ctx, "/skydns/test/xcc/churn", big); err != nil {
			t.Fatalf("put %d with TrimSpace between writes: %v", i, err)
		}
		time.Sleep(backendCommit)
		trimmed, err := TrimSpace(ctx, cli, endpoint, cfg.QuotaBytes)
		if err != nil {
			t.Fatalf("TrimSpace after put %d: %v", i, err)
		}
		if trimmed {
			trims++
		}
	}
	if trims == 0 {
		t.Error("20 MiB of history written into an 8 MiB quota and never trimmed")
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil || len(alarms.Alarms) != 0 {
		t.Errorf("alarms after the churn: %v, %v; want none", alarms.Alarms, err)
	}
}
