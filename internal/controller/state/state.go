// Package state keeps what the controller must remember across a restart
// and may not read back from a workload cluster: the last endpoints each
// headless export published per source cluster. A workload cluster's
// admin can write any slice into its own cluster, so what a target holds
// is no evidence of what a source cluster had; the controller keeps its
// own copy on the management cluster, in a namespace no tenant writes.
package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	// headlessKey is the ConfigMap data key of the endpoints (JSON).
	headlessKey = "endpoints.json"
	// MaxHeadlessBytes bounds the JSON kept for one GatewayDNS, below a
	// ConfigMap's 1 MiB; an export larger than this is not kept (the
	// caps on headless endpoints keep exports far below it).
	MaxHeadlessBytes = 900 << 10
	// requestTimeout bounds each call to the management cluster.
	requestTimeout = 10 * time.Second
)

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
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	name := headlessName(key)
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", s.Namespace, name, err)
	}
	if cm.Annotations[contract.AnnotationGatewayRef] != key {
		return nil, nil
	}
	var out map[string]contract.HeadlessEndpoints
	if err := json.Unmarshal([]byte(cm.Data[headlessKey]), &out); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", s.Namespace, name, headlessKey, err)
	}
	return out, nil
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
	if len(data) > MaxHeadlessBytes {
		return fmt.Errorf("last endpoints of %s: %d bytes, more than %d", key, len(data), MaxHeadlessBytes)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.Namespace,
			Labels:      map[string]string{contract.LabelManagedBy: contract.ManagedByValue, LabelKind: KindHeadless},
			Annotations: map[string]string{contract.AnnotationGatewayRef: key},
		},
		Data: map[string]string{headlessKey: string(data)},
	}
	// An update without a resourceVersion replaces whatever is there: the
	// one controller that leads is the only writer.
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write ConfigMap %s/%s: %w", s.Namespace, name, err)
	}
	return nil
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
