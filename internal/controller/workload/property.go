package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// ClusterIDProperty is the name of the KEP-2149 ClusterProperty that
// holds a cluster's id in its clusterset.
const ClusterIDProperty = "cluster.clusterset.k8s.io"

// clusterPropertyPath is where a member serves that ClusterProperty
// (about.k8s.io, cluster-scoped), when it has the CRD.
const clusterPropertyPath = "/apis/about.k8s.io/v1alpha1/clusterproperties/" + ClusterIDProperty

// PropertyRefresh is how often a member's cluster id property is read
// again. A GET, not a watch: the property is one small object that
// changes perhaps once in a cluster's life, and a change of id is
// deliberately slow to take effect (it renames every pod of the member).
const PropertyRefresh = time.Minute

var _ PropertyClient = (*typedClient)(nil)

// maxPropertyBytes bounds the ClusterProperty read, while it is read
// (withBodyCap): a tenant's API server may answer anything, and the
// property is one small object.
const maxPropertyBytes = 64 << 10

// property is the last read of a member's cluster id property.
type property struct {
	mu sync.Mutex
	// known: a read has answered (found or not found); value is nil when
	// the member has no such property or no CRD for it.
	known   bool
	value   *string
	readAt  time.Time
	reading bool
	// err is why the last read failed, nil once one answers.
	err error
}

// PropertyClient reads a member's cluster id property: value nil when it
// has none. The production client is one; a client that is not has none.
type PropertyClient interface {
	ClusterIDProperty(ctx context.Context) (*string, error)
}

// ClusterProperty returns w's ClusterProperty cluster.clusterset.k8s.io as
// last read: its value, nil when the member has none, and known false
// until a first read has answered. A read older than PropertyRefresh
// starts another in the background, which calls the cluster's namespace
// callback when the value changed. A client without PropertyClient has
// none.
func (m *Set) ClusterProperty(w *Cluster) (value *string, known bool) {
	pc, ok := w.client.(PropertyClient)
	if !ok {
		return nil, true
	}
	p := &w.property
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reading && (!p.known || time.Since(p.readAt) > w.reads.limits.PropertyRefresh) {
		p.reading = true
		go m.readProperty(w, pc)
	}
	return p.value, p.known
}

// readProperty reads the property once and records the answer; an error
// other than NotFound keeps the last known value.
func (m *Set) readProperty(w *Cluster, pc PropertyClient) {
	ctx, cancel := context.WithTimeout(w.ctx, RequestTimeout)
	defer cancel()
	// The body is cut at maxPropertyBytes while it is read, and counts
	// against the cluster's bytes meanwhile, as its informers' lists do.
	ctx, end := chargedRead(withBodyCap(ctx, maxPropertyBytes), w.reads, "the read of the ClusterProperty "+ClusterIDProperty)
	defer end()
	value, err := pc.ClusterIDProperty(ctx)
	p := &w.property
	p.mu.Lock()
	p.reading = false
	if err != nil {
		first := p.err == nil
		p.err = err
		p.mu.Unlock()
		logger := klog.FromContext(m.ctx)
		if first {
			logger.Info("Reading the cluster id property failed", "cluster", w.key, "err", err)
			// Its status says why the member is not read.
			w.notifyNamespace()
		} else {
			logger.V(2).Info("Reading the cluster id property failed again", "cluster", w.key, "err", err)
		}
		return
	}
	changed := !p.known || !equalValue(p.value, value)
	p.known, p.value, p.readAt, p.err = true, value, time.Now(), nil
	p.mu.Unlock()
	if changed {
		w.notifyNamespace()
	}
}

// PropertyError is why the last read of w's cluster id property failed
// (the last known value, if any, stands meanwhile), or "" when it
// answered.
func (w *Cluster) PropertyError() string {
	w.property.mu.Lock()
	defer w.property.mu.Unlock()
	if w.property.err == nil {
		return ""
	}
	return w.property.err.Error()
}

// ClusterIDProperty GETs the ClusterProperty: its value, or nil when the
// member has none (NotFound, also when the CRD is not installed).
func (c *typedClient) ClusterIDProperty(ctx context.Context) (*string, error) {
	raw, err := c.mcs.RESTClient().Get().AbsPath(clusterPropertyPath).DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ClusterProperty %s: %w", ClusterIDProperty, err)
	}
	return parseProperty(raw)
}

// parseProperty reads spec.value of a ClusterProperty.
func parseProperty(raw []byte) (*string, error) {
	if len(raw) > maxPropertyBytes {
		return nil, fmt.Errorf("ClusterProperty %s: %d bytes, more than %d", ClusterIDProperty, len(raw), maxPropertyBytes)
	}
	var cp struct {
		Spec struct {
			Value *string `json:"value"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &cp); err != nil {
		return nil, fmt.Errorf("ClusterProperty %s: %w", ClusterIDProperty, err)
	}
	if cp.Spec.Value == nil {
		empty := ""
		return &empty, nil
	}
	return cp.Spec.Value, nil
}

func equalValue(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
