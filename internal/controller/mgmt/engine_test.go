package mgmt

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
)

// TestSecretForCache: the Secret informer caches only what the controller
// reads: name, namespace, UID, resourceVersion, deletionTimestamp, and the
// key `value` of <cluster>-kubeconfig Secrets.
func TestSecretForCache(t *testing.T) {
	deleting := metav1.NewTime(time.Unix(1700000000, 0))
	full := func(name string) *corev1.Secret {
		return &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: "dev-team", UID: "uid-1", ResourceVersion: "42", Generation: 3,
				DeletionTimestamp: &deleting,
				Labels:            map[string]string{"cluster.x-k8s.io/cluster-name": "cluster-a"},
				Annotations: map[string]string{
					"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"c2VjcmV0"}}`,
				},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Cluster", Name: "cluster-a"}},
				Finalizers:      []string{"example.com/keep"},
			},
			Type: "cluster.x-k8s.io/secret",
			Data: map[string][]byte{
				workload.KubeconfigSecretKey: []byte("kubeconfig"),
				"password":                   []byte("secret"),
				"tls.key":                    []byte("key"),
			},
			StringData: map[string]string{"token": "secret"},
		}
	}
	kept := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev-team", UID: "uid-1", ResourceVersion: "42", DeletionTimestamp: &deleting},
			Data:       data,
		}
	}
	noValue := full("cluster-b-kubeconfig")
	delete(noValue.Data, workload.KubeconfigSecretKey)
	tombstone := cache.DeletedFinalStateUnknown{Key: "dev-team/x", Obj: full("x")}

	cases := []struct {
		name string
		in   any
		want any
	}{
		{"kubeconfig Secret keeps value", full("cluster-a-kubeconfig"),
			kept("cluster-a-kubeconfig", map[string][]byte{workload.KubeconfigSecretKey: []byte("kubeconfig")})},
		{"kubeconfig Secret without value", noValue, kept("cluster-b-kubeconfig", nil)},
		{"other Secret keeps no data", full("registry-credentials"), kept("registry-credentials", nil)},
		{"not a Secret", tombstone, tombstone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := secretForCache(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("secretForCache:\n got %+v\nwant %+v", got, tc.want)
			}
			// client-go may hand an object to the transform twice.
			again, err := secretForCache(got)
			if err != nil || !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("secretForCache is not idempotent: %+v, %v", again, err)
			}
		})
	}
}
