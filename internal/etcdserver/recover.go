package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
)

const (
	// memberDir is where etcd keeps everything of a member inside its
	// data directory; it is what a rebuild moves aside (the data directory
	// itself may be a volume's mount point, which cannot be renamed).
	memberDir = "member"
	// asideSuffix marks the last unreadable member directory, kept for a
	// post-mortem; an older one is removed, so the volume never fills up.
	asideSuffix = ".unreadable"
	// backendCheckTimeout bounds waiting for the lock of the database
	// file, which only a still-running etcd would hold.
	backendCheckTimeout = 2 * time.Second
)

// dataErrors are what etcd returns for a data directory it cannot read
// back: a torn or corrupt write-ahead log or snapshot.
var dataErrors = []error{
	walpb.ErrCRCMismatch, wal.ErrFileNotFound, wal.ErrMetadataConflict, wal.ErrSnapshotMismatch,
	wal.ErrSnapshotNotFound, wal.ErrSliceOutOfRange, wal.ErrDecoderNotFound,
	snap.ErrCRCMismatch, snap.ErrEmptySnapshot, io.ErrUnexpectedEOF,
}

func isDataError(err error) bool {
	for _, e := range dataErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// checkBackend opens the member's database read-only and checks every
// page. etcd itself panics on a database it cannot open, so a crash loop
// is only avoided by looking first. A data directory without a database
// (new, or never written) is fine.
func checkBackend(dataDir string) error {
	path := filepath.Join(dataDir, memberDir, "snap", "db")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: backendCheckTimeout})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return fmt.Errorf("check %s: %w", path, err)
		}
		return nil
	})
}

// setAside moves the member directory out of etcd's way, so it starts
// empty; the previous unreadable one, if any, is removed first.
func setAside(dataDir string) (string, error) {
	from := filepath.Join(dataDir, memberDir)
	to := from + asideSuffix
	if err := os.RemoveAll(to); err != nil {
		return "", fmt.Errorf("remove %s: %w", to, err)
	}
	if err := os.Rename(from, to); err != nil {
		return "", fmt.Errorf("move %s aside: %w", from, err)
	}
	return to, nil
}

// RecoverSpace clears etcd's NOSPACE alarm, which otherwise refuses every
// write and survives restarts: it compacts away all history, defragments
// to give the space back, and disarms the alarm. It reports whether there
// was an alarm. If the live records alone exceed the quota, the alarm
// comes back at the next write: the quota must grow.
func RecoverSpace(ctx context.Context, cli *clientv3.Client, endpoint string) (bool, error) {
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		return false, fmt.Errorf("etcd alarm list: %w", err)
	}
	var nospace []*pb.AlarmMember
	for _, a := range alarms.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			nospace = append(nospace, a)
		}
	}
	if len(nospace) == 0 {
		return false, nil
	}
	if err := compactAll(ctx, cli, endpoint); err != nil {
		return true, err
	}
	for _, a := range nospace {
		if _, err := cli.AlarmDisarm(ctx, (*clientv3.AlarmMember)(a)); err != nil {
			return true, fmt.Errorf("etcd disarm NOSPACE of member %x: %w", a.MemberID, err)
		}
	}
	return true, nil
}

// TrimSpace compacts away all history and defragments once the database
// file has grown past half of quota, so heavy churn never reaches the
// NOSPACE alarm: the records are a copy of the EndpointSlices and nothing
// reads their history. A quota of 0 is DefaultQuotaBytes, as in Config.
// It reports whether it trimmed.
func TrimSpace(ctx context.Context, cli *clientv3.Client, endpoint string, quota int64) (bool, error) {
	if quota <= 0 {
		quota = DefaultQuotaBytes
	}
	status, err := cli.Status(ctx, endpoint)
	if err != nil {
		return false, fmt.Errorf("etcd status of %s: %w", endpoint, err)
	}
	if status.DbSize <= quota/2 {
		return false, nil
	}
	return true, compactAll(ctx, cli, endpoint)
}

// compactAll compacts at the current revision and defragments endpoint,
// which gives the freed pages back to the file system.
func compactAll(ctx context.Context, cli *clientv3.Client, endpoint string) error {
	status, err := cli.Status(ctx, endpoint)
	if err != nil {
		return fmt.Errorf("etcd status of %s: %w", endpoint, err)
	}
	if _, err := cli.Compact(ctx, status.Header.Revision, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("etcd compact at %d: %w", status.Header.Revision, err)
	}
	if _, err := cli.Defragment(ctx, endpoint); err != nil {
		return fmt.Errorf("etcd defragment %s: %w", endpoint, err)
	}
	return nil
}
