package lab

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cluster DNS's ServiceAccount and kubeadm's ClusterRole for it, as a
// kubeadm cluster has them (the lab runs no kubeadm).
const (
	ClusterDNSServiceAccount = "coredns"
	kubeadmCoreDNSRole       = "system:coredns"
)

// kubeadmCoreDNSRules are kubeadm's system:coredns rules: what stock
// CoreDNS's kubernetes plugin reads for cluster.local. ServiceImports are
// not among them.
var kubeadmCoreDNSRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
}

// KubeadmClusterDNSKubeconfig gives w the cluster DNS's ServiceAccount
// kube-system/coredns bound to kubeadm's system:coredns (both created if
// missing) and returns a kubeconfig with a token of that account: a
// CoreDNS run with it reads with kubeadm's grants and the charts'.
func KubeadmClusterDNSKubeconfig(ctx context.Context, w *Cluster) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: coreDNSNamespace, Name: ClusterDNSServiceAccount}}
	if _, err := w.Client.CoreV1().ServiceAccounts(coreDNSNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ServiceAccount %s/%s on %s: %w", coreDNSNamespace, ClusterDNSServiceAccount, w.Name, err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: kubeadmCoreDNSRole}, Rules: kubeadmCoreDNSRules}
	if _, err := w.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ClusterRole %s on %s: %w", kubeadmCoreDNSRole, w.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kubeadmCoreDNSRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeadmCoreDNSRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: coreDNSNamespace, Name: ClusterDNSServiceAccount}},
	}
	if _, err := w.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ClusterRoleBinding %s on %s: %w", kubeadmCoreDNSRole, w.Name, err)
	}
	return serviceAccountKubeconfig(ctx, w, coreDNSNamespace, ClusterDNSServiceAccount)
}
