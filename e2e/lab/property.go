package lab

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// ClusterPropertyGVR is KEP-2149's ClusterProperty (about.k8s.io).
var ClusterPropertyGVR = schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"}

// clusterIDProperty is the ClusterProperty whose value is a member's id.
const clusterIDProperty = "cluster.clusterset.k8s.io"

// clusterPropertyCRD is the ClusterProperty CRD as far as the controller
// reads it: cluster-scoped, spec.value.
const clusterPropertyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusterproperties.about.k8s.io
  annotations:
    api-approved.kubernetes.io: "https://github.com/kubernetes/enhancements/pull/1645"
spec:
  group: about.k8s.io
  scope: Cluster
  names: {kind: ClusterProperty, listKind: ClusterPropertyList, plural: clusterproperties, singular: clusterproperty}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              value: {type: string}
`

// SetClusterIDProperty sets c's ClusterProperty cluster.clusterset.k8s.io
// to value, installing the CRD first when it is not; "" deletes it.
func SetClusterIDProperty(ctx context.Context, c *Cluster, value string) error {
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(clusterPropertyCRD), &crd.Object); err != nil {
		return fmt.Errorf("parse the ClusterProperty CRD: %w", err)
	}
	if _, err := c.Dynamic.Resource(crdGVR).Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply the ClusterProperty CRD on %s: %w", c.Name, err)
	}
	if err := waitEstablished(ctx, c, crd.GetName()); err != nil {
		return err
	}
	props := c.Dynamic.Resource(ClusterPropertyGVR)
	if value == "" {
		if err := props.Delete(ctx, clusterIDProperty, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ClusterProperty %s on %s: %w", clusterIDProperty, c.Name, err)
		}
		return nil
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
		"metadata": map[string]any{"name": clusterIDProperty},
		"spec":     map[string]any{"value": value},
	}}
	if _, err := props.Apply(ctx, clusterIDProperty, obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply ClusterProperty %s=%s on %s: %w", clusterIDProperty, value, c.Name, err)
	}
	return nil
}
