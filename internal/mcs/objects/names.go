package objects

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// Labels of the objects the controller writes into a member.
const (
	// LabelManagedBy marks every object of this package as the
	// controller's; only objects that carry it (and LabelServiceName)
	// are ever changed or deleted.
	LabelManagedBy = contract.LabelAppManagedBy
	// ManagedByValue is the value of LabelManagedBy and of
	// LabelSliceManagedBy: the controller's name, as on its other slices.
	ManagedByValue = contract.ManagedByValue
	// LabelSliceManagedBy is the EndpointSlice API's own mark of the
	// controller that manages a slice; the EndpointSlice controller of
	// the member leaves slices of another manager alone.
	LabelSliceManagedBy = discoveryv1.LabelManagedBy
	// LabelServiceName names the import (<svc>) an object belongs to.
	LabelServiceName = mcsv1beta1.LabelServiceName
	// LabelSourceCluster is the cluster id whose endpoints a slice holds.
	LabelSourceCluster = mcsv1beta1.LabelSourceCluster
	// LabelKubeServiceName is what kube-proxy and the cluster DNS select
	// slices by: always the derived Service's name (see the package doc).
	LabelKubeServiceName = discoveryv1.LabelServiceName
	// LabelHeadless keeps kube-proxy from reading the slices of a
	// Headless import.
	LabelHeadless = corev1.IsHeadlessService
)

// Annotations of a ServiceImport that list, comma-separated and sorted,
// the keys of the labels and annotations it carries from its exports
// (spec.exportedLabels, spec.exportedAnnotations): a writer removes a
// listed key no longer exported, and leaves keys others set alone.
const (
	AnnotationExportedLabels      = "xcc-dns.io/exported-labels"
	AnnotationExportedAnnotations = "xcc-dns.io/exported-annotations"
)

// ExportedKeys are the keys an annotation of o (AnnotationExportedLabels
// or AnnotationExportedAnnotations) lists; a key that could not have
// been exported is not one.
func ExportedKeys(o metav1.Object, annotation string) []string {
	v := o.GetAnnotations()[annotation]
	if v == "" {
		return nil
	}
	keys := strings.Split(v, ",")
	return slices.DeleteFunc(keys, func(k string) bool {
		return len(validation.IsQualifiedName(k)) > 0 || aggregate.Reserved(k)
	})
}

const (
	// derivedPrefix starts the name of every derived Service.
	derivedPrefix = "derived-"
	// derivedHashChars is the length of the hash in a derived name: 64
	// bits, so two imports of one namespace do not meet by chance.
	derivedHashChars = 16
	// portsHashChars is the length of the port-set hash in slice names.
	portsHashChars = 10
)

// DerivedServiceName is the name of the derived Service of the import
// namespace/name, and the kubernetes.io/service-name of its slices. A
// hash rather than <svc> so it never takes the name of a user's Service;
// the namespace is part of it so one name means one import everywhere.
func DerivedServiceName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return derivedPrefix + hex.EncodeToString(sum[:])[:derivedHashChars]
}

// sliceName names one slice of a source: derived name, source cluster,
// family, port-set hash, index. Every part after the cluster id has a
// fixed form, so two (cluster, family, port set, index) never share a
// name. At most 24+1+63+1+4+1+10+1+digits characters: within 253.
func sliceName(derived, cluster string, t discoveryv1.AddressType, portsKey string, index int) string {
	return fmt.Sprintf("%s-%s-%s-%s-%d", derived, cluster, strings.ToLower(string(t)), portsKey, index)
}

// Ours reports whether an object with these labels was written by the
// controller as part of an import: only those are changed or deleted.
// An EndpointSlice must also carry the EndpointSlice API's managed-by.
func Ours(labels map[string]string, slice bool) bool {
	if labels[LabelManagedBy] != ManagedByValue || labels[LabelServiceName] == "" {
		return false
	}
	return !slice || labels[LabelSliceManagedBy] == ManagedByValue
}

// ManagedLabels are the label keys the controller sets on its objects:
// a writer makes each equal to the desired object's, removing one the
// desired object has not (the headless mark of an import that turned
// ClusterSetIP), and leaves other labels to whoever set them.
var ManagedLabels = []string{
	LabelManagedBy, LabelSliceManagedBy, LabelServiceName, LabelSourceCluster, LabelKubeServiceName, LabelHeadless,
}

// baseLabels are the labels of every object of the import <svc>.
func baseLabels(svc string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelServiceName: svc}
}

// hashPorts identifies a port set in a slice's name.
func hashPorts(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%s/%d;", *p.Name, *p.Protocol, *p.Port)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])[:portsHashChars]
}
