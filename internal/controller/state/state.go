// Package state keeps what the controller must remember across a restart
// and may not read back from a workload cluster: the last endpoints each
// headless export published per source cluster (Headless), and of each
// ClusterSet the members holding its objects and each member's last
// exports (ClusterSets). A workload cluster's admin can write any object
// into its own cluster, so what a cluster holds is no evidence of what
// another had or of what the controller wrote; the controller keeps its
// own copy on the management cluster, in a namespace no tenant writes.
package state

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

const (
	// LabelKind marks the ConfigMaps of this package; its value says what
	// a ConfigMap holds.
	LabelKind = "xcc-dns.io/state"
	// KindHeadless is LabelKind's value on the last endpoints of a
	// headless export.
	KindHeadless = "headless"
	// headlessPrefix starts the name of a headless export's ConfigMap; a
	// hash of the GatewayDNS key follows, as keys may be longer than a
	// name allows.
	headlessPrefix = "xcc-dns-headless-"
	// headlessKey is the ConfigMap binaryData key of the endpoints: JSON,
	// gzipped (pod addresses and hostnames compress well).
	headlessKey = "endpoints.json.gz"
	// MaxHeadlessBytes bounds what is kept for one GatewayDNS, below a
	// ConfigMap's 1 MiB; an export larger than this is not kept
	// (ErrTooLarge). The caps on headless endpoints keep exports below it.
	MaxHeadlessBytes = 900 << 10
	// requestTimeout bounds each call to the management cluster.
	requestTimeout = 10 * time.Second
)

// ErrTooLarge: the endpoints of an export are too many to keep; what was
// kept of it before is removed rather than left stale.
var ErrTooLarge = errors.New("too large to keep")

// Headless is where the last endpoints of headless exports are kept, by
// GatewayDNS key ("<namespace>/<name>") and then source cluster.
type Headless interface {
	// Load returns what Save last kept for key; none is no error.
	Load(ctx context.Context, key string) (map[string]contract.HeadlessEndpoints, error)
	// Save keeps eps for key; empty eps forgets key.
	Save(ctx context.Context, key string, eps map[string]contract.HeadlessEndpoints) error
}

// ConfigMaps keeps state as ConfigMaps in one namespace of the management
// cluster: the controller's own, where only it (and the operator) write.
type ConfigMaps struct {
	Client    kubernetes.Interface
	Namespace string
	// Written, if set, is told the kind (LabelKind's value) and the
	// bytes stored of every ConfigMap written: the metric that warns
	// before one nears the 1 MiB a ConfigMap may hold.
	Written func(kind string, bytes int)
}

var _ Headless = (*ConfigMaps)(nil)

// headlessName is the ConfigMap name of key's endpoints.
func headlessName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return headlessPrefix + hex.EncodeToString(sum[:])[:20]
}

// Load implements Headless. A ConfigMap whose annotation names another key
// (a hash collision, or a hand edit) is treated as none.
func (s *ConfigMaps) Load(ctx context.Context, key string) (map[string]contract.HeadlessEndpoints, error) {
	name := headlessName(key)
	cm, err := s.get(ctx, name, contract.AnnotationGatewayRef, key)
	if cm == nil || err != nil {
		return nil, err
	}
	var out map[string]contract.HeadlessEndpoints
	// Read no more than a ConfigMap can hold, unpacked tenfold.
	if err := unpack(cm.BinaryData[headlessKey], 10*MaxHeadlessBytes, &out); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", s.Namespace, name, headlessKey, err)
	}
	return out, nil
}

// get reads the ConfigMap name; nil when there is none or its annotation
// ann names another key than key (a hash collision, or a hand edit).
func (s *ConfigMaps) get(ctx context.Context, name, ann, key string) (*corev1.ConfigMap, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", s.Namespace, name, err)
	}
	if cm.Annotations[ann] != key {
		return nil, nil
	}
	return cm, nil
}

// Save implements Headless: an update, or a create when there is none yet.
func (s *ConfigMaps) Save(ctx context.Context, key string, eps map[string]contract.HeadlessEndpoints) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	name := headlessName(key)
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	if len(eps) == 0 {
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ConfigMap %s/%s: %w", s.Namespace, name, err)
		}
		return nil
	}
	data, err := Encode(eps)
	if err != nil {
		return err
	}
	packed, err := pack(data)
	if err != nil {
		return fmt.Errorf("last endpoints of %s: %w", key, err)
	}
	if len(packed) > MaxHeadlessBytes {
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ConfigMap %s/%s: %w", s.Namespace, name, err)
		}
		return fmt.Errorf("last endpoints of %s: %d bytes packed, more than %d: %w", key, len(packed), MaxHeadlessBytes, ErrTooLarge)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.Namespace,
			Labels:      map[string]string{contract.LabelManagedBy: contract.ManagedByValue, LabelKind: KindHeadless},
			Annotations: map[string]string{contract.AnnotationGatewayRef: key},
		},
		BinaryData: map[string][]byte{headlessKey: packed},
	}
	return s.put(ctx, cm)
}

// Encode is the stored form of eps: JSON, without the refusals (they are
// reported when they happen, not kept). Equal eps encode equally.
func Encode(eps map[string]contract.HeadlessEndpoints) ([]byte, error) {
	kept := make(map[string]contract.HeadlessEndpoints, len(eps))
	for cluster, h := range eps {
		h.Refused = nil
		kept[cluster] = h
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, fmt.Errorf("encode last endpoints: %w", err)
	}
	return b, nil
}

// pack gzips data: the JSON of pod addresses and hostnames compresses well.
func pack(data []byte) ([]byte, error) {
	var packed bytes.Buffer
	zw := gzip.NewWriter(&packed)
	if _, err := zw.Write(data); err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	return packed.Bytes(), nil
}

// unpack decodes the gzipped JSON packed into out, reading no more than
// limit bytes unpacked.
func unpack(packed []byte, limit int64, out any) error {
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	if err := json.NewDecoder(io.LimitReader(zr, limit)).Decode(out); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}
