package apply

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// OursSelector is the label selector of the controller's objects of
// every kind; slices also carry objects.LabelSliceManagedBy, which the
// plan checks.
func OursSelector() string {
	managed, _ := labels.NewRequirement(objects.LabelManagedBy, selection.Equals, []string{objects.ManagedByValue})
	named, _ := labels.NewRequirement(objects.LabelServiceName, selection.Exists, nil)
	return labels.NewSelector().Add(*managed, *named).String()
}

// List reads what a member holds, in every namespace: the controller's
// ServiceImports, Services and EndpointSlices (ListOurs), and every
// ServiceExport. The clients are the member's bounded workload clients.
func List(ctx context.Context, m Member) (Existing, error) {
	ex, err := ListOurs(ctx, m)
	if err != nil {
		return ex, err
	}
	exports, err := m.Exports(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ex, fmt.Errorf("list ServiceExports in %s: %w", m.Cluster, err)
	}
	for i := range exports.Items {
		ex.Exports = append(ex.Exports, &exports.Items[i])
	}
	return ex, nil
}

// ListOurs reads the controller's ServiceImports, Services and
// EndpointSlices of a member, selected by label on the server; a caller
// with the member's ServiceExports in an informer adds those.
func ListOurs(ctx context.Context, m Member) (Existing, error) {
	var ex Existing
	opts := metav1.ListOptions{LabelSelector: OursSelector()}
	imports, err := m.Imports(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return ex, fmt.Errorf("list ServiceImports in %s: %w", m.Cluster, err)
	}
	services, err := m.Services(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return ex, fmt.Errorf("list Services in %s: %w", m.Cluster, err)
	}
	eps, err := m.Slices(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return ex, fmt.Errorf("list EndpointSlices in %s: %w", m.Cluster, err)
	}
	for i := range imports.Items {
		ex.Imports = append(ex.Imports, &imports.Items[i])
	}
	for i := range services.Items {
		ex.Services = append(ex.Services, &services.Items[i])
	}
	for i := range eps.Items {
		ex.Slices = append(ex.Slices, &eps.Items[i])
	}
	return ex, nil
}
